// ctxbed for vitest: `wireTests` registers one vitest test per built-in wire scenario (with a
// timeout that fits a scenario, not vitest's 5 s default); everything else is the package's.

import { test } from 'vitest';
import ctxbed from './index.js';

export const { Server, Tool, WireRun, WireRuleViolation, binary, conform, scenarios, serve, wireScenario } = ctxbed;

/**
 * One vitest test per named built-in wire scenario (every one when `names` is empty), each
 * given a started run; the run is checked after `body` unless `body` already finished it.
 * `timeout` is each test's, in milliseconds (120 s by default, conform's own step limit).
 */
export function wireTests(names, body, { timeout = 120_000, ...options } = {}) {
  ctxbed.wireTests(names, body, { ...options, test: (name, fn) => test(name, fn, timeout) });
}
