// Plain-text tables for people, in calicoctl's boxed style. Pure: rows in, text out.

export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = '+' + widths.map((w) => '-'.repeat(w + 2)).join('+') + '+'
  const row = (cells: readonly string[]): string => '|' + widths.map((w, i) => ` ${(cells[i] ?? '').padEnd(w)} `).join('|') + '|'
  return [line, row(headers), line, ...rows.map(row), line].join('\n') + '\n'
}

/** The ping matrix: rows are sources, columns destinations; "ok", "FAIL", or "-" on the diagonal. */
export function matrixTable(names: readonly string[], result: (from: string, to: string) => boolean | undefined): string {
  const rows = names.map((from) => [from, ...names.map((to) => (from === to ? '-' : result(from, to) === true ? 'ok' : 'FAIL'))])
  return table(['from \\ to', ...names], rows)
}
