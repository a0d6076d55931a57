// The self-checks of a page (book/_ext/self_check.py): no kernel, no server.
// A classic script, not a module: a page opened from file:// runs it too.
//
// Each question is a <div class="relpos-self-check-question" data-correct="N">
// holding a fieldset of radio buttons (value: the option's index; data-why: the id
// of its hidden explanation), a Check button (hidden until this script shows it)
// and a live region. Check writes the verdict and the chosen option's explanation
// into the live region, which screen readers announce; choosing another option
// clears it.
//
// MathJax makes every formula a Tab stop (for its menu). Inside a question that
// would put the formulas of the answers between the options and Check, so they
// leave the Tab order there (the label still reads them out); the copies in the
// verdict have none either.
(function () {
  "use strict";

  var FORMULA = "mjx-container[tabindex]";

  function untab(root) {
    root.querySelectorAll(FORMULA).forEach(function (formula) {
      formula.removeAttribute("tabindex");
    });
  }

  function clear(question) {
    question.querySelector(".relpos-self-check-feedback").textContent = "";
    delete question.dataset.verdict;
  }

  function check(question) {
    var feedback = question.querySelector(".relpos-self-check-feedback");
    var chosen = question.querySelector("input[type=radio]:checked");
    feedback.textContent = "";
    if (!chosen) {
      question.dataset.verdict = "none";
      feedback.textContent = "Choose an answer first.";
      return;
    }
    var right = chosen.value === question.dataset.correct;
    question.dataset.verdict = right ? "correct" : "wrong";
    var verdict = document.createElement("strong");
    verdict.textContent = right ? "Correct." : "Not quite.";
    feedback.appendChild(verdict);
    feedback.appendChild(document.createTextNode(" "));
    // the explanation as the page shows it, math typeset
    var why = document.getElementById(chosen.dataset.why);
    Array.prototype.forEach.call(why.childNodes, function (child) {
      feedback.appendChild(child.cloneNode(true));
    });
    untab(feedback);
  }

  function setUp(question) {
    var button = question.querySelector(".relpos-self-check-button");
    button.hidden = false;
    button.addEventListener("click", function () {
      check(question);
    });
    question.querySelectorAll("input[type=radio]").forEach(function (radio) {
      radio.addEventListener("change", function () {
        clear(question);
      });
    });
    // MathJax typesets after this script has run: untab its formulas as they come
    var fieldset = question.querySelector("fieldset");
    untab(fieldset);
    new MutationObserver(function () {
      untab(fieldset);
    }).observe(fieldset, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ["tabindex"],
    });
  }

  function setUpAll() {
    document.querySelectorAll(".relpos-self-check-question").forEach(setUp);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUpAll);
  } else {
    setUpAll();
  }
})();
