/* gradbook: keyboard access to scrollable blocks, without laying out the whole page.
 *
 * A block whose content overflows (a wide table, a long output) must be
 * reachable by keyboard to be scrolled (WCAG 2.1.1; axe rule
 * scrollable-region-focusable).  The PyData theme does this on "load" by
 * measuring every code block and output of the page at once
 * (addTabStopsToScrollableElements): on a long chapter that forces the layout
 * of every section (the site lets the browser skip off-screen sections, see
 * gradbook.css), and Lighthouse measured 0.4-1 s of blocked main thread.
 * Here the same check runs on each block only as it nears the screen
 * (IntersectionObserver), and again on resize; the theme's own pass is not
 * registered.  Code blocks and outputs wrap their lines (gradbook.css), so few
 * blocks overflow at all.
 *
 * This script runs in <head>, before the theme's deferred script registers its
 * listener.
 */
(function () {
  "use strict";

  // The theme's pass, recognised by its code: its shipped script is minified,
  // so the function's name (addTabStopsToScrollableElements) is gone.
  function isThemePass(listener) {
    var code = String(listener);
    return code.indexOf("scrollWidth") >= 0 && code.indexOf("pst-scrollable-table-container") >= 0;
  }
  var SCROLLABLE = ["pre", ".cell_output > .output", ".jp-RenderedHTMLCommon",
                    ".pst-scrollable-table-container", "div.math > .katex-display"].join(", ");

  var add = window.addEventListener;
  window.addEventListener = function (type, listener, options) {
    if (type === "load" && typeof listener === "function" && isThemePass(listener)) return;
    return add.call(this, type, listener, options);
  };

  function update(el) {
    // An equation scrolls sideways only: its glyphs may reach a pixel past its box's height,
    // and its width a pixel past the box's (KaTeX's boxes have fractional sizes).
    var equation = el.classList.contains("katex-display");
    var wide = el.scrollWidth > el.clientWidth + (equation ? 1 : 0);
    el.tabIndex = wide || (!equation && el.scrollHeight > el.clientHeight) ? 0 : -1;
  }

  function init() {
    var blocks = document.querySelectorAll(SCROLLABLE);
    if (!("IntersectionObserver" in window)) {
      Array.prototype.forEach.call(blocks, update);
      return;
    }
    var shown = new Set();
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) { shown.add(entry.target); update(entry.target); }
        else shown.delete(entry.target);
      });
    }, { rootMargin: "200px 0px" });
    Array.prototype.forEach.call(blocks, function (el) { observer.observe(el); });
    var timer = null;
    add.call(window, "resize", function () {
      clearTimeout(timer);
      timer = setTimeout(function () { shown.forEach(update); }, 300);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

/* gradbook: each language's search finds the pages of its language.
 *
 * The site is one Sphinx project with one search index: the English search
 * page would list the Chinese chapters too, and the Chinese one
 * (search-zh.html) the English chapters.  Sphinx's search (searchtools.js)
 * collects its results in Search._performSearch; on a search page this keeps
 * those whose page is not in the other language's folder (the shared pages,
 * such as the glossary, stay in both).  The count Sphinx reports is of the
 * kept results.
 */
(function () {
  "use strict";
  var OTHER = document.documentElement.lang.indexOf("zh") === 0 ? "chapters/en/" : "chapters/zh/";

  function wrap() {
    // searchtools.js declares `const Search` at the top level: a global binding, not a property of window.
    if (typeof Search === "undefined" || !Search._performSearch || Search._gradbookLanguage) return;
    var perform = Search._performSearch;
    Search._performSearch = function () {
      return perform.apply(this, arguments).filter(function (result) {
        return String(result[0]).indexOf(OTHER) !== 0;  // result: [docname, title, anchor, excerpt, score, file]
      });
    };
    // A result's excerpt is the text of its page: without KaTeX's HTML and TeX
    // (the MathML's text remains, so a formula reads once: "λ", not "λ\lambdaλ")
    // and without the page's own contents list, its header and the link to its twin.
    var toText = Search.htmlToText;
    if (toText) {
      Search.htmlToText = function (htmlString, anchor) {
        var doc = new DOMParser().parseFromString(htmlString, "text/html");
        doc.querySelectorAll(".katex-html, annotation, .bd-sidebar-secondary, .bd-toc, .onlyprint, .bd-header-article, " +
                              ".gradbook-lang-switch")
          .forEach(function (el) { el.remove(); });
        return toText.call(this, doc.documentElement.outerHTML, anchor);
      };
    }
    Search._gradbookLanguage = true;
  }

  // Before Search.init runs the query of the address (its DOMContentLoaded listener comes after this one
  // when searchtools.js loads after this script); at once when it loaded before.
  wrap();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", wrap);
})();

/* gradbook: the dropdown buttons of sphinx-togglebutton are named in English
 * by its script ("Toggle hidden content"), which runs in the page: on a
 * Chinese page they are renamed once it has made them. */
(function () {
  "use strict";
  if (document.documentElement.lang.indexOf("zh") !== 0) return;
  var NAMES = { "Toggle hidden content": "显示或隐藏内容" };
  function rename() {
    document.querySelectorAll("button[aria-label]").forEach(function (button) {
      var name = NAMES[button.getAttribute("aria-label")];
      if (name) button.setAttribute("aria-label", name);
    });
  }
  window.addEventListener("load", rename);
})();
