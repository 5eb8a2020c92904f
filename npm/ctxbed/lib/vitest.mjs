// ctxbed for vitest: `wireTests` registers one vitest test per built-in wire scenario (with a
// timeout that fits a scenario, not vitest's 5 s default), and `wireScenario`, called inside a
// test, fails that test when it passes without reading the run's verdict; everything else is the
// package's.

import { onTestFinished, test } from 'vitest';
import ctxbed from './index.js';

export const {
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
} = ctxbed;

/**
 * Each test's default timeout, in milliseconds: above conform's own limit on one step (120 s by
 * default, 60 s in some scenarios), so that when a step hangs, conform gives up on it first and
 * the test fails with its verdict naming the step, not with vitest's timeout.
 */
export const TIMEOUT_MS = 180_000;

/**
 * One vitest test per named built-in wire scenario (every one when `names` is empty), each
 * given a started run; the run is checked after `body` unless `body` already finished it.
 * `timeout` is each test's, in milliseconds (`TIMEOUT_MS` by default; keep it above conform's
 * step limit).
 */
export function wireTests(names, body, { timeout = TIMEOUT_MS, ...options } = {}) {
  ctxbed.wireTests(names, body, { ...options, test: (name, fn) => test(name, fn, timeout) });
}

/**
 * `wireScenario` inside a vitest test: when the test finishes having passed without reading the
 * run's verdict (`check()`, `violations()`, `finish()`), it fails with conform's verdict, unless
 * `{ assertChecked: false }`; the run is ended either way.
 */
export async function wireScenario(name, options = {}) {
  const run = await ctxbed.wireScenario(name, options);
  onTestFinished(async ({ task }) => {
    try {
      if (task.result?.state !== 'fail') await run.assertWasChecked();
    } finally {
      if (!run.verdict) await run.cleanup();
    }
  });
  return run;
}
