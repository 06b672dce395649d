// Typesets TeX with KaTeX for the Sphinx build (assets/ext/gradbook_math.py).
//
// Usage: node katex-render.js PATH/TO/node_modules/katex
// Reads one JSON request per line on stdin, {"tex": "...", "display": true|false},
// and writes one JSON answer per line on stdout, {"html": "..."} or {"error": "..."}.
// Strict: any TeX KaTeX does not support is an error, which fails the build.
"use strict";

const katex = require(process.argv[2]);
const readline = require("readline");

const lines = readline.createInterface({ input: process.stdin, terminal: false });
lines.on("line", (line) => {
  let answer;
  try {
    const { tex, display } = JSON.parse(line);
    answer = {
      html: katex.renderToString(tex, {
        displayMode: Boolean(display),
        throwOnError: true,
        strict: "error",
        output: "htmlAndMathml", // MathML for screen readers, HTML for the eye
      }),
    };
  } catch (error) {
    answer = { error: String(error && error.message ? error.message : error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
