import { Box, Text } from 'ink';

/** One object as aligned `label  value` lines. */
export function KeyValue({ fields }: { fields: Array<[string, string]> }) {
  const width = Math.max(0, ...fields.map(([label]) => label.length)) + 2;
  return (
    <Box flexDirection="column">
      {fields.map(([label, value]) => (
        <Box key={label}>
          <Box width={width} flexShrink={0}>
            <Text dimColor>{label}</Text>
          </Box>
          <Text dimColor={value === '—'}>{value}</Text>
        </Box>
      ))}
    </Box>
  );
}
