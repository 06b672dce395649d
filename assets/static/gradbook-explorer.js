/* gradbook explorers in the built book: switch precomputed frames.
 *
 * Each .gradbook-explorer holds its data (x, limits, panel geometry and one
 * frame [y, dy/dx] per combination of control values, keyed by the option
 * indices "i,j") in a JSON script tag; the SVG already shows the default
 * frame.  Moving a control redraws the two polylines from the matching frame.
 */
(function () {
  "use strict";

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

  function setup(root) {
    var data = JSON.parse(root.querySelector("script.gbx-data").textContent);
    var inputs = root.querySelectorAll("[data-index]");
    var curves = [root.querySelector(".gbx-curve-0"), root.querySelector(".gbx-curve-1")];

    function redraw() {
      var key = Array.prototype.map.call(inputs, function (el) { return el.value; }).join(",");
      var frame = data.frames[key];
      if (!frame) return;
      for (var p = 0; p < 2; p++) {
        curves[p].setAttribute("points", points(data.x, frame[p], data.panels[p], data.xlim, data.ylim[p]));
      }
      Array.prototype.forEach.call(inputs, function (el) {
        var output = el.parentNode.querySelector("output");
        if (output) output.textContent = data.options[+el.getAttribute("data-index")][+el.value];
      });
      root.setAttribute("data-frame", key);
    }

    Array.prototype.forEach.call(inputs, function (el) {
      el.addEventListener("input", redraw);
      el.addEventListener("change", redraw);
    });
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll(".gradbook-explorer"), setup);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
