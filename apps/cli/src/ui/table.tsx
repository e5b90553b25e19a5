import { Box, Text } from 'ink';

export interface TableProps {
  headers: string[];
  /** Cells already formatted as text, one array per row, in the order of `headers`. */
  rows: string[][];
}

const GAP = 2;

/** Columns sized to their widest cell; cells that do not fit the terminal are truncated, never wrapped. */
export function Table({ headers, rows }: TableProps) {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => (row[i] ?? '').length)) + GAP);
  return (
    <Box flexDirection="column">
      <Box>
        {headers.map((header, i) => (
          <Box key={header} width={widths[i]} flexShrink={i === headers.length - 1 ? 1 : 0}>
            <Text bold wrap="truncate-end">
              {header}
            </Text>
          </Box>
        ))}
      </Box>
      {rows.map((row, r) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: rows are static output, never reordered
        <Box key={r}>
          {row.map((cell, i) => (
            <Box key={headers[i]} width={widths[i]} flexShrink={i === row.length - 1 ? 1 : 0}>
              <Text wrap="truncate-end" dimColor={cell === '—'}>
                {cell}
              </Text>
            </Box>
          ))}
        </Box>
      ))}
    </Box>
  );
}
