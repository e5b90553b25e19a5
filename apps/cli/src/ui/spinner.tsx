import { Text, useAnimation } from 'ink';
import { tint } from './theme.ts';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Shown while an API call runs (terminals only). */
export function Spinner({ label }: { label: string }) {
  const { frame } = useAnimation({ interval: 80 });
  return (
    <Text>
      <Text color={tint('cyan')}>{FRAMES[frame % FRAMES.length]}</Text> {label}
    </Text>
  );
}
