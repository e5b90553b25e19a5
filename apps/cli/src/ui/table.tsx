import { Box, Text } from 'ink';

export interface TableProps {
  headers: string[];
  /** Cells already formatted as text, one array per row, in the order of `headers`. */
  rows: string[][];
  /** The terminal's width: wider tables truncate their widest columns (never the first, the id to copy). */
  maxWidth?: number;
}

const GAP = 2;
const MIN_WIDTH = 5 + GAP;

/**
 * Column widths that fit `maxWidth`: the first column keeps its natural width; the others share what is left, the
 * narrow ones keeping theirs and the wide ones getting equal shares (never below a few characters).
 */
export function fitWidths(natural: number[], maxWidth: number | undefined): number[] {
  const total = natural.reduce((a, b) => a + b, 0);
  if (maxWidth === undefined || total <= maxWidth) return natural;
  const widths = [...natural];
  let budget = maxWidth - (natural[0] ?? 0);
  const flexible = natural.map((width, i) => ({ width, i })).slice(1);
  flexible.sort((a, b) => a.width - b.width);
  flexible.forEach(({ width, i }, n) => {
    const share = Math.floor(budget / (flexible.length - n));
    widths[i] = Math.max(MIN_WIDTH, Math.min(width, share));
    budget -= widths[i]!;
  });
  return widths;
}

/** Columns sized to their widest cell, separated by two spaces; a cell that does not fit is truncated with `…`. */
export function Table({ headers, rows, maxWidth }: TableProps) {
  const natural = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)) + GAP);
  const widths = fitWidths(natural, maxWidth);
  const cell = (text: string, i: number, header = false) => (
    <Box key={headers[i]} width={widths[i]} flexShrink={0} paddingRight={GAP}>
      <Text wrap="truncate-end" bold={header} dimColor={!header && text === '—'}>
        {text}
      </Text>
    </Box>
  );
  return (
    <Box flexDirection="column">
      <Box>{headers.map((header, i) => cell(header, i, true))}</Box>
      {rows.map((row, r) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: rows are static output, never reordered
        <Box key={r}>{row.map((text, i) => cell(text, i))}</Box>
      ))}
    </Box>
  );
}
