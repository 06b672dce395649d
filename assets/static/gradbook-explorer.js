/* gradbook explorers in the built book: switch precomputed frames.
 *
 * The page format is gradlib/_explorer_format.py (its docstring is the
 * contract): each .gradbook-explorer holds its data (x, limits, panel
 * geometry, curve classes and one frame [y, dy/dx] per combination of
 * control values, keyed by the option indices joined by the separator) in a
 * JSON script tag; the SVG already shows the default frame.  Moving a control
 * redraws the curves from the matching frame.
 *
 * Loadable without a DOM: under node (module.exports) it exports its pure
 * functions, which tests/test_explorer_format.py compares with Python's.
 */
(function () {
  "use strict";

  var ROOT = "gradbook-explorer", DATA = "gbx-data", CONTROL = "data-index", FRAME = "data-frame";

  // The same projection and rounding as gradlib._explorer_format.points.
  function points(x, y, panel, xlim, ylim) {
    var out = [];
    for (var i = 0; i < x.length; i++) {
      if (y[i] === null) continue;
      var px = panel.left + (x[i] - xlim[0]) / (xlim[1] - xlim[0]) * panel.width;
      var py = panel.top + (1 - (y[i] - ylim[0]) / (ylim[1] - ylim[0])) * panel.height;
      out.push(px.toFixed(1) + "," + py.toFixed(1));
    }
    return out.join(" ");
  }

  function frameKey(indices, separator) {
    return indices.join(separator);
  }

  // Every curve's points for the frame `key`: one string per panel (null: no such frame).
  function framePoints(data, key) {
    var frame = data.frames[key];
    if (!frame) return null;
    return data.panels.map(function (panel, p) {
      return points(data.x, frame[p], panel, data.xlim, data.ylim[p]);
    });
  }

  function setup(root) {
    var data = JSON.parse(root.querySelector("script." + DATA).textContent);
    var inputs = root.querySelectorAll("[" + CONTROL + "]");
    var curves = data.curves.map(function (name) { return root.querySelector("." + name); });

    function redraw() {
      var key = frameKey(Array.prototype.map.call(inputs, function (el) { return el.value; }), data.separator);
      var drawn = framePoints(data, key);
      if (!drawn) return;
      drawn.forEach(function (text, p) { curves[p].setAttribute("points", text); });
      Array.prototype.forEach.call(inputs, function (el) {
        var shown = data.options[+el.getAttribute(CONTROL)][+el.value];
        var output = el.parentNode.querySelector("output");
        if (output) output.textContent = shown;
        // A slider's position is an index: screen readers announce the value it stands for.
        if (el.type === "range") el.setAttribute("aria-valuetext", shown);
      });
      root.setAttribute(FRAME, key);
    }

    Array.prototype.forEach.call(inputs, function (el) {
      el.addEventListener("input", redraw);
      el.addEventListener("change", redraw);
    });
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("." + ROOT), setup);
  }

  if (typeof module !== "undefined" && module.exports) {
    module.exports = {ROOT: ROOT, DATA: DATA, CONTROL: CONTROL, FRAME: FRAME,
                      points: points, frameKey: frameKey, framePoints: framePoints};
  }
  if (typeof document === "undefined") return;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
