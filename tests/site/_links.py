"""axe-core's ``link-in-text-block`` rule, run once per link style instead of per link.

The rule (axe 4.12) asks whether a link inside a block of text can be told from the
text around it without relying on colour alone. Which links it applies to is axe's
own ``link-in-text-block-matches`` (a link with text, shown, inside a block with
more text than its links): particular to the element. Its verdict for an applicable
link is what its two checks read:

- ``link-in-text-block``: the nearest block ancestor (display block, list-item,
  table..., flex, grid, inline-block), then the contrast of the link's text colour
  with that block's, and of their background colours (foreground colours take the
  text fill, its stroke, text shadows and the opacity above them; backgrounds are
  what is painted behind);
- ``link-in-text-block-style``: whether the link differs from its block by
  anything but colour (``elementIsDistinct``: a background image, a top or bottom
  border or an outline that is drawn, the first font family, font size, weight
  and style, text decoration line and style), or has ``::before``/``::after``
  content (then incomplete, never a violation). axe 4.12 reads no hover or focus
  state: the styles are those of the link at rest.

A link's *signature* (``SIGNATURES`` below) is all of these, read with
``getComputedStyle`` on the link and on its block, with the link's role and
display, and what the link and the block each have painted behind them (the
``BACKDROP`` of tests/site/_contrast.py: every ancestor that paints or changes
anything). Two applicable links with one signature therefore get the same
verdict, under _contrast.py's one assumption (the background behind an element is
its ancestors'). So a signature counts as audited (``seen``) once axe passed or
failed one of its links; a link it reports incomplete (an unclear background,
pseudo content) leaves the signature new. Per page (``link_audit``):

1. every link of axe's selector gets its signature;
2. axe runs the rule on the links of new signatures, its own applicability test
   wrapped so that it takes only the first applicable link of each signature;
3. where that link came back incomplete, the signature's other links are audited.

What is weaker than auditing every link on every page: a failing style is reported
on the first page that shows it, not on each; and a link whose background is not
its ancestors' (nothing on this site) could differ from the one audited.
"""

from __future__ import annotations

from typing import Any

from _contrast import BACKDROP, load_axe

# Runs in the page: gives every link of axe's selector a signature (its index in the
# returned list, in data-relpos-link) and returns the list.
SIGNATURES = (
    """() => {
  const cues = ['color', '-webkit-text-fill-color', '-webkit-text-stroke-width',
                '-webkit-text-stroke-color', 'text-shadow', 'font-family',
                'font-size', 'font-weight', 'font-style', 'text-decoration',
                'text-decoration-line', 'text-decoration-style', 'background-image',
                'display'];
  const frame = ['border-top', 'border-bottom', 'outline']
    .flatMap(side => ['style', 'width', 'color'].map(p => `${side}-${p}`));
  const blocks = ['block', 'list-item', 'table', 'flex', 'grid', 'inline-block'];
  const isBlock = el => {
    const display = getComputedStyle(el).getPropertyValue('display');
    return blocks.includes(display) || display.startsWith('table-');
  };
  const read = (el, names) => {
    const style = getComputedStyle(el);
    return names.map(p => style.getPropertyValue(p)).join('|');
  };
  const pseudo = el => ['before', 'after']
    .map(p => getComputedStyle(el, `::${p}`).getPropertyValue('content')).join('|');
"""
    + BACKDROP
    + """
  const ids = new Map();
  const signatures = [];
  for (const el of document.querySelectorAll('[data-relpos-link-audited]')) {
    el.removeAttribute('data-relpos-link-audited');  // an audit before this one's
  }
  for (const el of document.querySelectorAll('a[href], [role=link]')) {
    let block = el.parentElement;
    while (block && !isBlock(block)) block = block.parentElement;
    const key = [el.getAttribute('role') || '', read(el, cues.concat(frame)),
                 pseudo(el), block ? read(block, cues) : 'no block',
                 backdrop(el), block ? backdrop(block) : ''].join(' / ');
    if (!ids.has(key)) { ids.set(key, signatures.length); signatures.push(key); }
    el.setAttribute('data-relpos-link', ids.get(key));
  }
  return {signatures, shadow: Array.from(document.querySelectorAll('*'))
                                   .some(el => el.shadowRoot)};
}"""
)

# Runs in the page: axe's link-in-text-block rule on the links whose signature is in
# ``wanted``, the first applicable one of each (``first``) or every applicable one
# not audited before (axe's own rule, narrowed for this run and then put back).
# Returns the violations (as axe lists them), the signatures of
# the links evaluated (``taken``) and of those passed or failed (``decided``).
RUN = """async ([wanted, first]) => {
  const want = new Set(wanted.map(String));
  const rule = axe._audit.rules.find(r => r.id === 'link-in-text-block');
  const [applies, shipped] = [rule.matches, rule.selector];
  const taken = new Set();
  let evaluated = 0;
  rule.selector = '[data-relpos-link]';
  rule.matches = (node, virtualNode, context) => {
    const id = node.getAttribute('data-relpos-link');
    if (!want.has(id) || node.hasAttribute('data-relpos-link-audited')
        || (first && taken.has(id)) || !applies(node, virtualNode, context)) {
      return false;
    }
    taken.add(id);
    evaluated++;
    node.setAttribute('data-relpos-link-audited', '');
    return true;
  };
  let result;
  try {
    result = await axe.run(document, {
      runOnly: {type: 'rule', values: ['link-in-text-block']}, elementRef: true});
  } finally {  // the rule as it was loaded: load_axe's page reuses it
    [rule.matches, rule.selector] = [applies, shipped];
  }
  const decided = new Set();
  for (const found of result.violations.concat(result.passes)) {
    for (const node of found.nodes) {
      decided.add(node.element.getAttribute('data-relpos-link'));
    }
  }
  const violations = result.violations.map(v => ({
    id: v.id, impact: v.impact,
    nodes: v.nodes.map(n => ({target: n.target, html: n.html,
                              failureSummary: n.failureSummary}))}));
  return {violations, decided: Array.from(decided), taken: Array.from(taken),
          evaluated};
}"""


# Runs in the page: the rule on every link of the page.
WHOLE = """async () => axe.run(document, {
  runOnly: {type: 'rule', values: ['link-in-text-block']},
  resultTypes: ['violations']})"""


def link_audit(page: Any, axe_script: str, seen: set[str]) -> dict[str, Any]:
    """axe's link-in-text-block findings for the links whose signature ``seen``
    lacks; adds the signatures given a verdict here to ``seen``.

    Returns axe's ``violations`` (for ``findings``) and ``audited``, how many
    links axe evaluated (applicable ones). A page with a shadow root (none on
    this site) is audited whole: its links are out of ``querySelectorAll``'s
    reach.
    """
    found = page.evaluate(SIGNATURES)
    load_axe(page, axe_script)
    if found["shadow"]:
        result = page.evaluate(WHOLE)
        return {"violations": result["violations"], "audited": -1}
    signatures: list[str] = found["signatures"]
    wanted = [i for i, key in enumerate(signatures) if key not in seen]
    violations: list[dict] = []
    audited = 0
    for first in (True, False):
        if not wanted:
            break
        result = page.evaluate(RUN, [wanted, first])
        seen.update(signatures[int(i)] for i in result["decided"])
        violations += result["violations"]
        audited += result["evaluated"]
        # again: the signatures whose link came back incomplete, none other
        wanted = sorted(set(result["taken"]) - set(result["decided"]), key=int)
    return {"violations": violations, "audited": audited}
