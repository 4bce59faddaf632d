// A few lines of DOM building for the status page: elements with text (never HTML strings, so nothing
// the API returns can inject markup) and SVG elements. Browser-only; no data fetching here.

export type Child = Node | string | number | null | undefined | false
export type Attrs = Readonly<Record<string, string | number | boolean | undefined>>

function fill(el: Element, attrs: Attrs, children: readonly Child[]): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue
    el.setAttribute(k, v === true ? '' : String(v))
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue
    el.append(typeof c === 'string' || typeof c === 'number' ? String(c) : c)
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  fill(el, attrs, children)
  return el
}

const SVG_NS = 'http://www.w3.org/2000/svg'

export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS<K>(SVG_NS, tag)
  fill(el, attrs, children)
  return el
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id)
  if (el === null) throw new Error(`no element #${id}`)
  return el as T
}
