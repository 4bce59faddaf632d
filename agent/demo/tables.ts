// Plain-text tables for people, in calicoctl's boxed style. Pure: rows in, text out. Given a width, a table
// that would be wider first wraps its long cells at spaces, then repeats its first column over several
// narrower tables, and only as a last resort breaks a word.

/** The demo's output width: every table and line it prints fits a 100-column terminal. */
export const DEMO_WIDTH = 100

export interface TableOptions {
  /** The widest a line may be, borders included (default: no limit). */
  readonly maxWidth?: number
}

/** Greedy word wrap at spaces; a word longer than `width` is cut into pieces of `width`. */
export function wrapCell(text: string, width: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    let w = word
    while (w.length > width) {
      if (line !== '') lines.push(line)
      line = ''
      lines.push(w.slice(0, width))
      w = w.slice(width)
    }
    if (line === '') line = w
    else if (line.length + 1 + w.length <= width) line += ` ${w}`
    else {
      lines.push(line)
      line = w
    }
  }
  lines.push(line)
  return lines
}

const tableWidth = (widths: readonly number[]): number => widths.reduce((a, w) => a + w + 3, 1)

/** Narrows the widest columns, one character at a time, to no less than `min[i]`, until the table fits. */
function narrowed(widths: readonly number[], min: readonly number[], maxWidth: number): number[] {
  const w = [...widths]
  while (tableWidth(w) > maxWidth) {
    let widest = -1
    for (let i = 0; i < w.length; i++) if ((w[i] ?? 0) > (min[i] ?? 0) && (widest < 0 || (w[i] ?? 0) > (w[widest] ?? 0))) widest = i
    if (widest < 0) break
    w[widest] = (w[widest] ?? 0) - 1
  }
  return w
}

function render(headers: readonly string[], rows: readonly (readonly string[])[], widths: readonly number[]): string {
  const line = '+' + widths.map((w) => '-'.repeat(w + 2)).join('+') + '+'
  const row = (cells: readonly string[]): string[] => {
    const wrapped = widths.map((w, i) => wrapCell(cells[i] ?? '', w))
    const height = Math.max(...wrapped.map((c) => c.length))
    return Array.from({ length: height }, (_, k) => '|' + widths.map((w, i) => ` ${(wrapped[i]?.[k] ?? '').padEnd(w)} `).join('|') + '|')
  }
  return [line, ...row(headers), line, ...rows.flatMap(row), line].join('\n') + '\n'
}

export function table(headers: readonly string[], rows: readonly (readonly string[])[], opts: TableOptions = {}): string {
  const maxWidth = opts.maxWidth ?? Infinity
  const columns = headers.map((h, i) => [h, ...rows.map((r) => r[i] ?? '')])
  const natural = columns.map((c) => Math.max(...c.map((s) => s.length)))
  if (tableWidth(natural) <= maxWidth) return render(headers, rows, natural)
  // Wrapping at spaces keeps every word (a namespace, a URL) whole, for copying.
  const longestWord = columns.map((c) => Math.max(...c.flatMap((s) => s.split(' ').map((x) => x.length))))
  const wrapped = narrowed(natural, longestWord, maxWidth)
  if (tableWidth(wrapped) <= maxWidth) return render(headers, rows, wrapped)
  // Too many columns: the first (the row's name) and as many others as fit, then the next ones.
  if (headers.length > 2) {
    const groups: number[][] = []
    for (let i = 1; i < headers.length; i++) {
      const g = groups.at(-1)
      if (g !== undefined && tableWidth([...g, i].map((k) => natural[k] ?? 0)) <= maxWidth) g.push(i)
      else groups.push([0, i])
    }
    if (groups.length > 1) {
      const pick = <T>(xs: readonly T[], g: readonly number[]): T[] => g.map((k) => xs[k] as T)
      return groups.map((g) => table(pick(headers, g), rows.map((r) => pick(r, g)), opts)).join('\n')
    }
  }
  // Words longer than the room there is: the last resort breaks them.
  return render(headers, rows, narrowed(wrapped, wrapped.map(() => 1), maxWidth))
}

/** The ping matrix: rows are sources, columns destinations; "ok", "FAIL", or "-" on the diagonal. */
export function matrixTable(names: readonly string[], result: (from: string, to: string) => boolean | undefined, opts: TableOptions = {}, sources: readonly string[] = names): string {
  const rows = sources.map((from) => [from, ...names.map((to) => (from === to ? '-' : result(from, to) === true ? 'ok' : 'FAIL'))])
  return table(['from \\ to', ...names], rows, opts)
}
