// Draws every interactive figure of the page (relpos.book.interactive.Interactive).
// vl-convert bundles this with Vega, Vega-Lite and Vega-Embed; book/_ext/interactive.py
// wraps the bundle in one function and serves it as a classic script (a module
// does not load from file://), _static/relpos-vega.js. In it `vegaEmbed` is
// Vega-Embed's function; nothing but window.relposViews is made global.
// A figure arrives as <figure class="relpos-interactive"> holding the still
// picture and the chart's JSON. The chart is drawn in front of the picture, which
// is hidden once the chart is there: with JavaScript off the picture stays.
const OPTIONS = {renderer: "svg", actions: false, tooltip: {theme: "light"}};

window.relposViews = window.relposViews || {};

async function draw(figure) {
  const spec = JSON.parse(figure.querySelector("script.relpos-spec").textContent);
  const live = document.createElement("div");
  live.className = "relpos-live";
  // A chart wider than the column scrolls inside its own frame, reachable by keyboard.
  // Vega-Embed makes the frame a graphics document labelled with the description.
  live.tabIndex = 0;
  figure.insertBefore(live, figure.querySelector(".relpos-still"));
  const result = await vegaEmbed(live, spec, OPTIONS);
  window.relposViews[figure.dataset.figure] = result.view;
  const hint = figure.querySelector(".relpos-hint");
  if (hint) hint.hidden = false;
  figure.dataset.live = "true";
}

function drawAll() {
  for (const figure of document.querySelectorAll("figure.relpos-interactive")) {
    draw(figure).catch((error) => {
      console.error("interactive figure " + figure.dataset.figure + ": " + error);
    });
  }
}

if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", drawAll);
} else {
  drawAll();
}
