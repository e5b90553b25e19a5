import { render } from 'ink';
import { Spinner } from './spinner.tsx';
import type { View } from './view.ts';
import { ViewOutput } from './view-output.tsx';

/** Terminal output: a spinner while the call runs, then the result as ink components. */
export async function presentRich<T>(label: string, call: () => Promise<T>, view: (result: T) => View): Promise<T> {
  const app = render(<Spinner label={label} />, { patchConsole: false });
  let result: T;
  try {
    result = await call();
  } catch (error) {
    app.clear();
    app.unmount();
    await app.waitUntilExit();
    throw error;
  }
  app.rerender(<ViewOutput view={view(result)} width={process.stdout.columns || 80} />);
  app.unmount();
  await app.waitUntilExit();
  return result;
}
