// Types of the `ctxbed` package.

/** The path of the ctxbed binary (CTXBED_BIN, else the per-platform package's). */
export function binary(): string;

/** The names of the built-in wire scenarios. */
export function scenarios(): string[];

export interface ServeOptions {
  /** A mock-model file. */
  mock?: string;
  /** A built-in mock model (`wire-window-8k-english`). */
  builtin?: string;
  /** Multiplies scripted latencies; 0 (the default) answers at once. */
  timeScale?: number;
}

export class Server {
  readonly address: string;
  readonly openaiBaseUrl: string;
  readonly anthropicBaseUrl: string;
  /** Every exchange so far, as the canonical records `--record` writes. */
  requests(): Array<Record<string, unknown>>;
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
  /** The agent's final text for this step. */
  reply(text: string): void;
  /** The call failed: `context_overflow`, `rate_limited`, `timeout`, `provider_error`,
   * `malformed_reply`, `tool_error`, `budget_refused` or `other`. */
  error(kind: string, message: string): void;
}

export interface Violation {
  rule: string;
  step: number | null;
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
  log: string;
  /** Each violation, then the trace of the steps named. */
  report: string;
}

export class WireRun {
  readonly name: string;
  readonly api: 'openai' | 'anthropic';
  readonly openaiBaseUrl: string;
  readonly anthropicBaseUrl: string;
  readonly model: string;
  readonly apiKey: string;
  readonly window: number | null;
  readonly maxOutputTokens: number;
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
}

export class WireRuleViolation extends Error {
  readonly violations: Violation[];
}

export interface WireOptions {
  harness?: string;
  version?: string;
  context?: 'own' | 'docs recipe' | 'none';
  logs?: string;
}

/** Starts a built-in wire scenario with the calling code as the harness. */
export function wireScenario(name: string, options?: WireOptions): Promise<WireRun>;

/** node:test: one test per named scenario (all when empty), checked after `body`. */
export function wireTests(
  names: string[],
  body: (run: WireRun) => Promise<void>,
  options?: { test?: (name: string, fn: () => Promise<void>) => unknown },
): void;
