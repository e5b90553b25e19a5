import { Box, Text } from 'ink';
import { formatValue } from './format.ts';
import { KeyValue } from './key-value.tsx';
import { Table } from './table.tsx';
import { tint } from './theme.ts';
import type { View } from './view.ts';

/** The views of view.ts as ink components, for a terminal. */
export function ViewOutput({ view, width }: { view: View; width?: number }) {
  if (view.kind === 'message') {
    return (
      <Text>
        <Text color={tint('green')}>✔</Text> {view.text}
      </Text>
    );
  }
  if (view.kind === 'record') {
    return (
      <Box flexDirection="column">
        <KeyValue fields={view.fields.map(([key, value]) => [key, formatValue(value, 'rich')])} />
        {view.note ? <Text color={tint('yellow')}>{view.note}</Text> : null}
      </Box>
    );
  }
  if (view.rows.length === 0) return <Text dimColor>{view.summary ? `${view.empty} (${view.summary})` : view.empty}</Text>;
  return (
    <Box flexDirection="column">
      <Table
        headers={view.columns.map((c) => c.header)}
        rows={view.rows.map((row) => view.columns.map((c) => formatValue(c.value(row), 'rich', true)))}
        maxWidth={width}
      />
      {view.summary ? <Text dimColor>{view.summary}</Text> : null}
    </Box>
  );
}
