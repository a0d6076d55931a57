"""axe-core's colour contrast rule, run once per style signature instead of per text.

axe's ``color-contrast`` (about nine tenths of an audit's time) decides each text
element from what its evaluation reads (axe 4.12, ``color-contrast-evaluate``):
the text colour (``color``, ``-webkit-text-fill-color``, its stroke), the opacity
of the element and of every element above it, the background colours composited
behind it (images and gradients make it incomplete, never a violation), the font
size and weight (normal or large text), and the text shadow. A *signature*
(``SIGNATURES`` below) is all of these, read with ``getComputedStyle`` on the
element and on each of its ancestors up to the root that paints or changes
anything (a background colour or image, an opacity below 1, a filter or a blend
mode); ancestors that change nothing are skipped, so the signature does not
depend on how deeply the element is nested. An element with a background image
or gradient on the way up is a signature of its own (it is audited every time).

Two elements with the same signature therefore get the same contrast ratio and
the same threshold, hence the same verdict, once axe reaches a verdict at all.
What can keep it from one is particular to the element (hidden, a single
character, a non-Unicode icon, a pseudo element, a partly covered box): axe then
reports it *incomplete* or passes it as *hidden*, never as a violation. So a
signature counts as audited (``seen``) only once axe has measured a contrast
ratio for one of its elements, passed or failed; until then every element of it
is audited on every page. Per page (``contrast_audit``):

1. every element the rule can apply to (a direct text child, or a form field)
   gets its signature; those of signatures already audited are left out;
2. one element per new signature is audited (axe's ``color-contrast`` with its
   selector narrowed to the marked elements; the rest of the page is still
   there for the backgrounds behind them): the first one drawn with more than
   one character, or every element of the signature where none is;
3. the other elements of every signature that got no ratio in step 2 are audited.

On this site (2026-12-06, light mode) axe measured 32,092 texts, of 71
signatures; no signature had two different ratios or colour pairs, and every
text axe checked carried a signature.

A failing signature fails the audit on the first page that shows it; the same
style on a later page is not listed again. The one assumption is that the
background behind a text is its ancestors' (as on this site: nothing is
positioned behind the text of another box); axe reports text that another box
partly covers as incomplete.
"""

from __future__ import annotations

from typing import Any

#: Marks the elements axe's colour contrast rule is narrowed to.
MARK = "data-relpos-contrast"

# A function body's lines (JavaScript): ``backdrop(node)``, a key for what ``node``
# and its ancestors paint behind its content (shared with tests/site/_links.py).
BACKDROP = """
  const layer = ['background-color', 'background-image', 'opacity', 'filter',
                 'mix-blend-mode', 'backdrop-filter'];
  const neutral = ['rgba(0, 0, 0, 0)', 'none', '1', 'none', 'normal', 'none'];
  const below = new Map();  // element -> what it and its ancestors paint
  let unique = 0;
  const backdrop = node => {
    if (!node) return '';
    if (below.has(node)) return below.get(node);
    const s = getComputedStyle(node);
    const values = layer.map(p => s.getPropertyValue(p));
    let key;
    if (values[1] !== 'none') {  // an image or gradient: equal to no other, anywhere
      key = `image ${unique++} ${Math.random()} ${performance.now()}`;
    } else {
      const mine = values.some((v, i) => v !== neutral[i]) ? values.join('|') : '';
      key = [mine, backdrop(node.parentElement)].filter(Boolean).join(' / ');
    }
    below.set(node, key);
    return key;
  };
"""

# Runs in the page: gives every element the rule can apply to a signature (its
# index in the returned list, in data-relpos-signature) and returns the list.
SIGNATURES = (
    """() => {
  const own = ['color', '-webkit-text-fill-color', '-webkit-text-stroke-width',
               '-webkit-text-stroke-color', 'font-size', 'font-weight',
               'text-shadow'];
  const fields = new Set(['INPUT', 'SELECT', 'TEXTAREA']);
  // never shown, so never audited: their text is code or style, not read
  const unseen = new Set(['SCRIPT', 'STYLE', 'TEMPLATE']);
  const ownText = el => Array.from(el.childNodes)
    .filter(n => n.nodeType === 3).map(n => n.nodeValue).join('').trim();
"""
    + BACKDROP
    + """
  const ids = new Map();
  const signatures = [];
  for (const el of document.querySelectorAll('[data-relpos-audited]')) {
    el.removeAttribute('data-relpos-audited');  // an audit before this one's
  }
  for (const el of [document.body, ...document.body.querySelectorAll('*')]) {
    if (unseen.has(el.tagName)) continue;
    const field = fields.has(el.tagName);
    const text = field ? '' : ownText(el);
    if (!field && text === '') continue;
    const style = getComputedStyle(el);
    const key = [field ? 'field ' + (el.type || el.tagName) : 'text',
                 own.map(p => style.getPropertyValue(p)).join('|'),
                 backdrop(el)].join(' / ');
    if (!ids.has(key)) { ids.set(key, signatures.length); signatures.push(key); }
    el.setAttribute('data-relpos-signature', ids.get(key));
    // a likely first choice: drawn, and more than one character
    el.toggleAttribute(
      'data-relpos-likely', el.checkVisibility() && (field || text.length > 1));
  }
  return {signatures, shadow: Array.from(document.querySelectorAll('*'))
                                   .some(el => el.shadowRoot)};
}"""
)

# Runs in the page: marks for audit, of each signature index in ``wanted``, in the
# first round its first likely element (all its elements if none is likely), in
# the second every element not marked before.
MARK_ELEMENTS = """([wanted, first]) => {
  const want = new Set(wanted.map(String));
  const all = Array.from(document.querySelectorAll('[data-relpos-signature]'));
  const id = el => el.getAttribute('data-relpos-signature');
  const likely = new Set(all.filter(el => el.hasAttribute('data-relpos-likely'))
                            .map(id));
  let marked = 0;
  for (const el of all) {
    const sig = id(el);
    if (!want.has(sig) || el.hasAttribute('data-relpos-audited')) continue;
    if (first && likely.has(sig)) {
      if (!el.hasAttribute('data-relpos-likely')) continue;
      want.delete(sig);
    }
    el.setAttribute('data-relpos-contrast', '');
    el.setAttribute('data-relpos-audited', '');
    marked++;
  }
  return marked;
}"""

# Runs in the page: axe's colour contrast rule on the elements ``selector`` matches
# only (axe's own rule, its selector narrowed for this run and then put back).
# Returns the violations (as axe lists them) and the signatures it measured a
# ratio for.
RUN = """async selector => {
  const rule = axe._audit.rules.find(r => r.id === 'color-contrast');
  const shipped = rule.selector;
  rule.selector = selector;
  let result;
  try {
    result = await axe.run(document, {
      runOnly: {type: 'rule', values: ['color-contrast']}, elementRef: true});
  } finally {
    rule.selector = shipped;  // axe as it was loaded: load_axe's page reuses it
  }
  const measured = new Set();
  for (const rule of result.violations.concat(result.passes)) {
    for (const node of rule.nodes) {
      const data = (node.any[0] || {}).data || {};
      const id = node.element.getAttribute('data-relpos-signature');
      if (typeof data.contrastRatio === 'number' && data.messageKey !== 'hidden'
          && data.fgColor && data.bgColor && id !== null) {
        measured.add(id);
      }
    }
  }
  for (const el of document.querySelectorAll('[data-relpos-contrast]')) {
    el.removeAttribute('data-relpos-contrast');
  }
  const violations = result.violations.map(v => ({
    id: v.id, impact: v.impact,
    nodes: v.nodes.map(n => ({target: n.target, html: n.html,
                              failureSummary: n.failureSummary}))}));
  return {violations, measured: Array.from(measured)};
}"""


# Runs in the page: whether axe-core is loaded in it already.
LOADED = "() => typeof window.axe === 'object' && typeof window.axe.run === 'function'"


def load_axe(page: Any, axe_script: str) -> None:
    """Load axe-core into the open page unless it is there already: once per page
    load (its 570 KB take about 65 ms to read). The audits here put back every
    rule they narrow, and axe clears its caches after each run, so the runs on one
    load (every rule, then each mode's colour rules) start from the axe that was
    loaded (test_the_colour_audits_leave_axe_as_they_found_it)."""
    if not page.evaluate(LOADED):
        page.evaluate(axe_script)


def contrast_audit(page: Any, axe_script: str, seen: set[str]) -> dict[str, Any]:
    """axe's colour contrast findings for the elements whose signature ``seen``
    lacks; adds the signatures measured here to ``seen``.

    Returns axe's ``violations`` (for ``findings``) and ``audited``, how many
    elements were audited. A page with a shadow root (none on this site) is
    audited whole: its elements are out of ``querySelectorAll``'s reach.
    """
    load_axe(page, axe_script)
    found = page.evaluate(SIGNATURES)
    signatures: list[str] = found["signatures"]
    new = [i for i, key in enumerate(signatures) if key not in seen]
    if found["shadow"]:
        violations = run_marked(page, signatures, seen, "*")
        return {"violations": violations, "audited": -1}
    violations: list[dict] = []
    audited = 0
    for first in (True, False):
        marked = page.evaluate(MARK_ELEMENTS, [new, first]) if new else 0
        if not marked:
            continue
        violations += run_marked(page, signatures, seen, f"[{MARK}]")
        audited += marked
        new = [i for i in new if signatures[i] not in seen]
    return {"violations": violations, "audited": audited}


def run_marked(
    page: Any, signatures: list[str], seen: set[str], selector: str
) -> list[dict]:
    """Run the rule once on the elements ``selector`` matches: its violations; the
    signatures it measured a ratio for join ``seen``."""
    result = page.evaluate(RUN, selector)
    seen.update(signatures[int(i)] for i in result["measured"])
    return result["violations"]
