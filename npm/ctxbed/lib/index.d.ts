// Types of the `ctxbed` package.

/** The path of the ctxbed binary (CTXBED_BIN, else the per-platform package's). */
export function binary(): string;

/** The names of the built-in wire scenarios. */
export function scenarios(): string[];

export interface ServeOptions {
  /** A mock-model file, or the same document as an object (written as TOML for the binary). */
  mock?: string | Record<string, unknown>;
  /** The model's name when `mock` is an object (`mock` by default). */
  name?: string;
  /** A built-in mock model (`wire-window-8k-english`). */
  builtin?: string;
  /** Multiplies scripted latencies; 0 (the default) answers at once. */
  timeScale?: number;
}

export class Server {
  readonly address: string;
  readonly openaiBaseUrl: string;
  readonly anthropicBaseUrl: string;
  /** The served models as `GET /v1/models` lists them. */
  models(): Promise<Array<{ id: string; context_window: number | null }>>;
  /** The (first) served model's name and context window. */
  info(): Promise<{ model: string; window: number | null }>;
  /** Every exchange so far, as the canonical records `--record` writes. */
  requests(): Array<Record<string, unknown>>;
  /** The wire rules the requests so far break (window, pairing, system, duplicate_result,
   * count_tokens, or the `rules` named), computed by the binary. */
  violations(options?: { rules?: string[] }): Violation[];
  close(): Promise<void>;
}

/** Starts `ctxbed serve` on a free loopback port. */
export function serve(options: ServeOptions): Promise<Server>;

export interface ToolResult {
  text: string;
  error: boolean;
}

export class Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
  readonly results: ToolResult[];
  /** The next scripted result; the arguments are not inspected. */
  call(arguments_?: unknown): ToolResult;
}

export interface Step {
  readonly number: number;
  readonly input: string;
  readonly session: string;
  readonly user: string;
  /** Images the user attaches after the text, in order, to send as the harness sends a user's
   * images: each a whole file in standard base64. */
  readonly images: ReadonlyArray<{ readonly media_type: string; readonly data: string }>;
  /** True on the first step after the scenario restarts the harness: a user's process would be
   * new here, so build the agent again from what it keeps under `run.env.CTXBED_STATE_DIR`. */
  readonly restarted: boolean;
  /** True once `reply` or `error` was called. Taking the next step (or leaving the loop) before
   * that fails the step at once: `steps()` throws `UnansweredStep`. */
  readonly answered: boolean;
  /** The agent's final text for this step. */
  reply(text: string): void;
  /** The call failed: `context_overflow`, `rate_limited`, `timeout`, `provider_error`,
   * `malformed_reply`, `tool_error`, `budget_refused` or `other`. */
  error(kind: string, message: string): void;
}

export interface Violation {
  rule: string;
  step: number | null;
  /** The request's number in a served record (`Server.violations`). */
  request?: number | null;
  detail: string;
}

export interface Verdict {
  scenario: string;
  verdict: 'pass' | 'fail' | 'n/a' | 'new';
  ok: boolean;
  rules: string[];
  violations: Violation[];
  problem: string | null;
  trace: string;
  /** The adapter's log (the trace and the requests beside it), where it is kept: under the
   * `logs` you gave, or for a run that failed; `null` for a passing run in a scratch directory
   * that is removed. */
  log: string | null;
  /** Each violation, then the trace of the steps named, then the log. */
  report: string;
}

export class WireRun {
  readonly name: string;
  readonly api: 'openai' | 'responses' | 'anthropic';
  readonly openaiBaseUrl: string;
  readonly anthropicBaseUrl: string;
  readonly model: string;
  readonly apiKey: string;
  readonly window: number | null;
  readonly maxOutputTokens: number;
  /** Anthropic's extended thinking `budget_tokens`, when the scenario turns thinking on. */
  readonly thinkingBudget: number | null;
  readonly stream: boolean;
  readonly system: string;
  readonly tools: Tool[];
  /** The CTXBED_* variables a protocol adapter gets. */
  readonly env: Record<string, string>;
  tool(name: string): Tool;
  steps(): AsyncGenerator<Step, void, void>;
  finish(): Promise<Verdict>;
  violations(): Promise<Violation[]>;
  /** Throws WireRuleViolation when a wire rule was broken. */
  check(): Promise<void>;
  /** Throws UncheckedRun (with conform's verdict) when the verdict was never read
   * (`check`, `violations`, `finish`) and `assertChecked` is on. */
  assertWasChecked(): Promise<void>;
  /** Stops the run and removes what it kept but a failed run's logs. */
  cleanup(): Promise<void>;
}

export class WireRuleViolation extends Error {
  readonly violations: Violation[];
}

/** Thrown by `steps()` when the test's code takes the next step without answering one. */
export class UnansweredStep extends Error {}

/** A run whose verdict was never read and whose options did not say `assertChecked: false`. */
export class UncheckedRun extends Error {}

export interface WireOptions {
  harness?: string;
  version?: string;
  context?: 'own' | 'docs recipe' | 'none';
  /** Where the logs are kept (a scratch directory by default, kept only when the run fails). */
  logs?: string;
  /** false: a run whose verdict is never read is not an error (by default it fails the
   * process at exit, or, from `ctxbed/vitest`, its test). */
  assertChecked?: boolean;
}

/** Starts a built-in wire scenario with the calling code as the harness. A run whose verdict
 * is never read fails the process at exit unless `assertChecked: false`. */
export function wireScenario(name: string, options?: WireOptions): Promise<WireRun>;

/** node:test: one test per named scenario (all when empty), checked after `body`. */
export function wireTests(
  names: string[],
  body: (run: WireRun) => Promise<void>,
  options?: WireTestsOptions,
): void;

export interface WireTestsOptions {
  /** The test function to register with (node:test's `test` by default). */
  test?: (name: string, fn: () => Promise<void>) => unknown;
  /** What the run's `ready` line says; `node:<scenario>` by default. */
  harness?: string;
  version?: string;
  context?: 'own' | 'docs recipe' | 'none';
}

/** An agent for the in-process adapter: takes a step, returns its reply text. */
export type Agent = (step: Step) => string | Promise<string>;

export interface ConformOptions {
  /** Built-in scenario names; every one when empty or absent. */
  scenarios?: string[];
  harness?: string;
  version?: string;
  context?: 'own' | 'docs recipe' | 'none';
}

export const conform: {
  /** Runs each scenario against the agent `agentFactory(run)` builds; resolves to each verdict
   * by name. A thrown error answers its step as an error (kind: its `ctxbedKind`, else `other`). */
  run(
    agentFactory: (run: WireRun) => Agent | Promise<Agent>,
    options?: ConformOptions,
  ): Promise<Record<string, Verdict>>;
};
