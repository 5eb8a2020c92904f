import type { WireOptions, WireRun, WireTestsOptions } from './index.js';

export {
  Server,
  Tool,
  UncheckedRun,
  UnansweredStep,
  WireRun,
  WireRuleViolation,
  binary,
  conform,
  scenarios,
  serve,
} from './index.js';

/** Each test's default timeout in milliseconds (180 s): above conform's limit on one step, so a
 * hung step fails with conform's verdict, not vitest's timeout. */
export const TIMEOUT_MS: number;

/** vitest: one test per named scenario (all when empty), checked after `body`. */
export function wireTests(
  names: string[],
  body: (run: WireRun) => Promise<void>,
  options?: Omit<WireTestsOptions, 'test'> & { timeout?: number },
): void;

/** Starts a built-in wire scenario inside a vitest test: the test fails if it passes without
 * reading the run's verdict, unless `assertChecked: false`. */
export function wireScenario(name: string, options?: WireOptions): Promise<WireRun>;
