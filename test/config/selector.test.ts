// Calico's selector language: what each operator matches (tables over label maps, including Calico's
// "missing label satisfies != and not in" rule) and the character offsets that parse errors name.
import t from 'tap'
import { parseSelector, SelectorError, usesGlobal } from '../../config/selector.js'

const node = { 'kubernetes.io/hostname': 'node-1', rack: 'r1', 'route-reflector': 'true', zone: 'eu-west-1a' }

// [selector, labels, expected]
const matches: [string, Record<string, string>, boolean][] = [
  ['', {}, true],
  ['   ', node, true],
  ['all()', {}, true],
  ['all( )', node, true],
  ['has(rack)', node, true],
  ['has( rack )', node, true],
  ['has(spine)', node, false],
  ['!has(spine)', node, true],
  ['!has(rack)', node, false],
  ["rack == 'r1'", node, true],
  ['rack == "r1"', node, true],
  ["rack == 'r2'", node, false],
  ["spine == 'x'", node, false],
  ["rack != 'r2'", node, true],
  ["rack != 'r1'", node, false],
  ["spine != 'x'", node, true], // a missing label is "not equal"
  ["rack in {'r1','r2'}", node, true],
  ["rack in { 'r3' , 'r2' }", node, false],
  ['rack in {}', node, false],
  ["spine in {'x'}", node, false],
  ["rack not in {'r1'}", node, false],
  ["rack not in {'r2','r3'}", node, true],
  ["spine not in {'x'}", node, true], // a missing label is "not in"
  ["zone contains 'west'", node, true],
  ["zone contains 'east'", node, false],
  ["spine contains ''", node, false],
  ["zone starts with 'eu-'", node, true],
  ["zone starts  with 'us-'", node, false],
  ["zone ends with '1a'", node, true],
  ["zone ends with '1b'", node, false],
  ["kubernetes.io/hostname == 'node-1'", node, true],
  ["route-reflector == 'true' && rack == 'r1'", node, true],
  ["route-reflector == 'true' && rack == 'r2'", node, false],
  ["rack == 'r2' || has(zone)", node, true],
  // && binds tighter than ||
  ["rack == 'r2' && has(zone) || has(rack)", node, true],
  ["rack == 'r2' && (has(zone) || has(rack))", node, false],
  ["!(rack == 'r1')", node, false],
  ["!!has(rack)", node, true],
  ["!has(rack) || !has(zone) || zone == 'eu-west-1a'", node, true],
  ['global()', node, false],
]

t.test('selectors match label maps as Calico does', async (t) => {
  for (const [sel, labels, want] of matches) {
    t.equal(parseSelector(sel).matches(labels), want, `${JSON.stringify(sel)} -> ${want}`)
  }
})

t.test('global() is true only when the caller says the context is global', async (t) => {
  const s = parseSelector('global()')
  t.equal(s.matches({}, { global: true }), true)
  t.equal(s.matches({}), false)
  t.equal(usesGlobal(s.ast), true)
  t.equal(usesGlobal(parseSelector("a == 'b' || !global()").ast), true)
  t.equal(usesGlobal(parseSelector('all()').ast), false)
})

t.test('the AST is built once and keeps operator structure', async (t) => {
  const s = parseSelector("a == 'x' && !has(b) || c in {'1','2'}")
  t.same(s.ast, {
    op: 'or',
    left: { op: 'and', left: { op: 'eq', key: 'a', value: 'x' }, right: { op: 'not', expr: { op: 'has', key: 'b' } } },
    right: { op: 'in', key: 'c', values: ['1', '2'] },
  })
  t.equal(s.source, "a == 'x' && !has(b) || c in {'1','2'}")
})

// [selector, offset of the fault, reason fragment]
const bad: [string, number, RegExp][] = [
  ["rack = 'r1'", 5, /expected ==/],
  ["rack == 'r1", 8, /unterminated string/],
  ["rack == r1", 8, /expected a quoted string/],
  ["rack == 'r1' &&", 15, /end of selector/],
  ["rack == 'r1' & has(a)", 13, /expected &&/],
  ["rack == 'r1' | has(a)", 13, /expected \|\|/],
  ['rack', 4, /expected an operator after label 'rack'/],
  ["rack is 'r1'", 5, /expected an operator/],
  ['has()', 4, /label name in has/],
  ['has(rack', 8, /expected '\)'/],
  ['all(x)', 4, /expected '\)'/],
  ["(rack == 'r1'", 13, /expected '\)'/],
  ["rack == 'r1')", 12, /unexpected '\)'/],
  ["rack in {'a' 'b'}", 13, /expected ',' or '}'/],
  ["rack in 'a'", 8, /expected '\{'/],
  ["rack == 'a' rack == 'b'", 12, /unexpected label 'rack'/],
  ['@foo', 0, /unexpected character "@"/],
  ['&& a', 0, /found '&&'/],
]

t.test('parse errors name the character offset', async (t) => {
  for (const [sel, offset, reason] of bad) {
    t.throws(() => parseSelector(sel), SelectorError, sel)
    try {
      parseSelector(sel)
    } catch (e) {
      const err = e as SelectorError
      t.equal(err.offset, offset, `${JSON.stringify(sel)} fails at offset ${offset}`)
      t.match(err.reason, reason, `${JSON.stringify(sel)}: ${err.reason}`)
      t.match(err.message, `offset ${offset}`)
    }
  }
})
