import type { WireRun, WireTestsOptions } from './index.js';

export {
  Server,
  Tool,
  WireRun,
  WireRuleViolation,
  binary,
  conform,
  scenarios,
  serve,
  wireScenario,
} from './index.js';

/** vitest: one test per named scenario (all when empty), checked after `body`. */
export function wireTests(
  names: string[],
  body: (run: WireRun) => Promise<void>,
  options?: Omit<WireTestsOptions, 'test'> & { timeout?: number },
): void;
