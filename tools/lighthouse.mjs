// Lighthouse on pages of the built site, in one headless Chromium (tools/sitequality.py runs it).
//
// Usage: node tools/lighthouse.mjs CHROMIUM BASE_URL OUT.json PAGE [PAGE ...]
// Desktop preset, no throttling (throttlingMethod "provided"): the page as this
// machine loads it.  Writes {page: {scores, metrics, failing}} to OUT.json, where
// failing lists the audits below a full score that count towards a category.
import fs from "node:fs";
import lighthouse, { desktopConfig } from "lighthouse";
import * as chromeLauncher from "chrome-launcher";

const [chromePath, base, out, ...pages] = process.argv.slice(2);
if (!chromePath || !base || !out || pages.length === 0) {
  console.error("usage: node tools/lighthouse.mjs CHROMIUM BASE_URL OUT.json PAGE [PAGE ...]");
  process.exit(2);
}

const CATEGORIES = ["performance", "accessibility", "best-practices", "seo"];
const METRICS = {
  "first-contentful-paint": "fcp_ms",
  "largest-contentful-paint": "lcp_ms",
  "total-blocking-time": "tbt_ms",
  "cumulative-layout-shift": "cls",
  "speed-index": "si_ms",
  "total-byte-weight": "bytes",
};

const chrome = await chromeLauncher.launch({
  chromePath,
  chromeFlags: [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    // Nothing but the local server resolves: the site must not need the internet.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
  ],
});
const results = {};
try {
  for (const page of pages) {
    const flags = {
      port: chrome.port, output: "json", logLevel: "error",
      onlyCategories: CATEGORIES, throttlingMethod: "provided",
    };
    const { lhr } = await lighthouse(new URL(page, base).href, flags, desktopConfig);
    if (lhr.runtimeError) throw new Error(`${page}: ${lhr.runtimeError.code} ${lhr.runtimeError.message}`);
    const scores = {}, metrics = {}, failing = {};
    for (const id of CATEGORIES) {
      const category = lhr.categories[id];
      scores[id] = category.score === null ? null : Math.round(category.score * 100);
      failing[id] = category.auditRefs
        .filter((ref) => ref.weight > 0 && lhr.audits[ref.id].score !== null && lhr.audits[ref.id].score < 1)
        .map((ref) => ({ id: ref.id, score: lhr.audits[ref.id].score, title: lhr.audits[ref.id].title,
                         value: lhr.audits[ref.id].displayValue || "" }));
    }
    for (const [audit, name] of Object.entries(METRICS)) {
      const value = lhr.audits[audit] && lhr.audits[audit].numericValue;
      metrics[name] = value === undefined ? null : (name === "cls" ? Number(value.toFixed(4)) : Math.round(value));
    }
    results[page] = { scores, metrics, failing, lighthouse: lhr.lighthouseVersion };
  }
} finally {
  await chrome.kill();
}
fs.writeFileSync(out, JSON.stringify(results, null, 1));
