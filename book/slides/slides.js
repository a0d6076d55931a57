// Every deck: typeset the math with KaTeX (the spans tools/build_slides.py wrote),
// then start reveal.js with its highlight and speaker-notes plugins. Offline: every
// file is next to the deck (lib/), nothing is fetched from another host.
document.querySelectorAll(".reveal .math").forEach((element) => {
  katex.render(element.textContent, element, {
    displayMode: element.classList.contains("block"),
    throwOnError: true,
  });
});

Reveal.initialize({
  width: 1280,
  height: 720,
  margin: 0.04,
  hash: true,
  slideNumber: "c/t",
  transition: "none",
  plugins: [RevealHighlight, RevealNotes],
});
