'use strict';
// ctxbed for node: a deterministic mock model on loopback (`serve`), built-in wire scenarios
// run with the calling test as the harness (`wireScenario`), and node:test helpers (`wireTests`).
// The binary does the work; no rule is computed here: every verdict is `ctxbed conform`'s.

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { binary } = require('./binary');
const { dumps: tomlDumps } = require('./toml');

const LISTENING = 'listening on http://';

/**
 * The records of a `--record` file, one object per line. A last line that is not JSON (a server
 * killed while writing it leaves it torn) is skipped with a warning naming the file and line; a
 * line that is not JSON before the last throws.
 */
function readRecord(recordPath) {
  if (!fs.existsSync(recordPath)) return [];
  const numbered = fs
    .readFileSync(recordPath, 'utf8')
    .split('\n')
    .map((line, index) => [index + 1, line])
    .filter(([, line]) => line.trim());
  const records = [];
  for (const [index, [number, line]] of numbered.entries()) {
    try {
      records.push(JSON.parse(line));
    } catch (error) {
      if (index < numbered.length - 1) throw error;
      process.emitWarning(`${recordPath}:${number}: the last line is torn; skipped`);
    }
  }
  return records;
}

/** Reads newline-terminated lines from a stream, one promise at a time. */
class Lines {
  constructor(stream) {
    this.buffer = '';
    this.waiting = [];
    this.ended = false;
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      this.buffer += chunk;
      this.flush();
    });
    stream.on('end', () => {
      this.ended = true;
      this.flush();
    });
  }

  flush() {
    while (this.waiting.length > 0) {
      const newline = this.buffer.indexOf('\n');
      if (newline >= 0) {
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        this.waiting.shift()(line);
      } else if (this.ended) {
        this.waiting.shift()(null);
      } else {
        return;
      }
    }
  }

  /** The next line, or null at the end. */
  next() {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.flush();
    });
  }
}

/** The names of the built-in wire scenarios (`ctxbed conform --list`). */
function scenarios() {
  const listing = spawnSync(binary(), ['conform', '--list'], { encoding: 'utf8' });
  if (listing.status !== 0) throw new Error(`ctxbed conform --list failed: ${listing.stderr}`);
  return listing.stdout
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => line.split(/\s+/)[0]);
}

/** A running `ctxbed serve`. */
class Server {
  constructor(process, address, scratch) {
    this.process = process;
    this.address = address;
    this.scratch = scratch;
    this.recordPath = path.join(scratch, 'requests.jsonl');
  }

  /** The base URL for an OpenAI client (`…/chat/completions` is appended). */
  get openaiBaseUrl() {
    return `http://${this.address}/v1`;
  }

  /** The base URL for an Anthropic client (`/v1/messages` is appended). */
  get anthropicBaseUrl() {
    return `http://${this.address}`;
  }

  /** The served models as `GET /v1/models` lists them (`id`, `context_window`). */
  async models() {
    if (!this.modelList) {
      const answer = await fetch(`${this.openaiBaseUrl}/models`);
      this.modelList = (await answer.json()).data;
    }
    return this.modelList;
  }

  /** The (first) served model's name and context window: `{ model, window }`. */
  async info() {
    const [first] = await this.models();
    return { model: first.id, window: first.context_window ?? null };
  }

  /**
   * The wire rules the requests so far break, computed by the binary (`ctxbed violations`):
   * window, pairing, system, duplicate_result and count_tokens, or the `rules` named. Each is
   * `{ rule, request, step: null, detail }`.
   */
  violations({ rules = [] } = {}) {
    if (!fs.existsSync(this.recordPath)) return [];
    const args = ['violations', this.recordPath, '--format', 'json'];
    for (const rule of rules) args.push('--rule', rule);
    const checked = spawnSync(binary(), args, { encoding: 'utf8' });
    if (checked.status !== 0 && checked.status !== 1) {
      throw new Error((checked.stderr || `ctxbed violations exited ${checked.status}`).trim());
    }
    return checked.stdout
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line))
      .filter((item) => item.type === 'violation')
      .map((item) => ({ rule: item.rule, request: item.request, step: null, detail: item.detail }));
  }

  /**
   * Every exchange so far, as the canonical records `--record` writes; a torn last line is
   * skipped with a warning (`readRecord`).
   */
  requests() {
    return readRecord(this.recordPath);
  }

  /** Stops the server (its record is synced) and removes its scratch directory. */
  async close() {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      const exited = new Promise((resolve) => this.process.once('exit', resolve));
      this.process.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(this.scratch, { recursive: true, force: true });
  }
}

/**
 * Starts `ctxbed serve` on a free loopback port: `{ builtin: 'wire-window-8k-english' }`,
 * `{ mock: 'path/to/mock.toml' }`, or `{ mock: { window: 8000, turns: [...] } }` (the same
 * document as an object, served as the model `name`, `mock` by default); `timeScale`
 * multiplies scripted latencies (0 by default). A mistake in the mock rejects with the
 * binary's diagnostics.
 */
async function serve({ mock, builtin, name = 'mock', timeScale = 0 } = {}) {
  if ((mock === undefined) === (builtin === undefined)) {
    throw new Error('give serve() a mock model (a file or an object) or a builtin name, not both or neither');
  }
  const text = typeof mock === 'object' ? tomlDumps(mock) : null;
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxbed-serve-'));
  if (text !== null) {
    // The model is named by its file's stem, as for any mock file.
    mock = path.join(scratch, `${name}.toml`);
    fs.writeFileSync(mock, text);
  }
  const args = ['serve', '--listen', '127.0.0.1:0', '--record', path.join(scratch, 'requests.jsonl')];
  args.push('--time-scale', String(timeScale));
  args.push(...(builtin !== undefined ? ['--builtin', builtin] : [mock]));
  const child = spawn(binary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const closed = new Promise((resolve) => child.once('close', resolve));
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const first = await new Lines(child.stdout).next();
  if (!first || !first.startsWith(LISTENING)) {
    child.kill('SIGKILL');
    await closed;
    fs.rmSync(scratch, { recursive: true, force: true });
    throw new Error(`ctxbed serve did not start: ${first || ''}${stderr}`.trim());
  }
  return new Server(child, first.slice(LISTENING.length).trim(), scratch);
}

/** Raised by `WireRun.check()`: the run broke wire rules (the message says which, with trace). */
class WireRuleViolation extends Error {
  constructor(message, violations) {
    super(message);
    this.name = 'WireRuleViolation';
    this.code = 'ERR_ASSERTION';
    this.violations = violations;
  }
}

/** The blocks of `trace` for `steps` (all of it when none is named). */
function traceExcerpt(trace, steps) {
  if (steps.length === 0) return trace.trimEnd();
  const wanted = steps.map((n) => `step ${n} `);
  const kept = [];
  let keeping = false;
  for (const line of trace.split('\n')) {
    if (line.startsWith('step ')) keeping = wanted.some((prefix) => line.startsWith(prefix));
    else if (!line.startsWith(' ')) keeping = false;
    if (keeping) kept.push(line);
  }
  return kept.join('\n');
}

/** The readable report of a run's violations. */
function describeViolations(violations, trace) {
  if (violations.length === 0) return 'no wire rule broken';
  const lines = [`${violations.length} wire rule(s) broken:`];
  for (const v of violations) {
    lines.push(`  ${v.step === null ? 'scenario' : `step ${v.step}`}: ${v.rule}: ${v.detail}`);
  }
  const steps = [...new Set(violations.map((v) => v.step).filter((s) => s !== null))].sort((a, b) => a - b);
  const excerpt = traceExcerpt(trace, steps);
  if (excerpt) lines.push('', 'trace of the steps named:', excerpt);
  return lines.join('\n');
}

/** A tool of the scenario: `call()` returns its scripted results in turn. */
class Tool {
  constructor(spec) {
    this.name = spec.name;
    this.description = spec.description || '';
    this.parameters = spec.parameters || {};
    this.results = (spec.results || []).map((r) => ({ text: r.text, error: Boolean(r.error) }));
    this.calls = 0;
  }

  /** The next scripted result (`{ text, error }`); the arguments are not inspected. */
  call() {
    this.calls += 1;
    return this.results[Math.min(this.calls, this.results.length) - 1];
  }
}

/** A built-in wire scenario, running, with the calling code as its harness. */
class WireRun {
  constructor(name) {
    this.name = name;
    this.verdict = null;
  }

  async start({ harness = 'node', version = '0', context = 'own', logs } = {}) {
    this.scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxbed-wire-'));
    const socketPath = path.join(this.scratch, 'bridge.sock');
    this.listener = net.createServer();
    // Every relay conform starts (a second one after each restart) connects here, in turn.
    this.connections = [];
    this.waiting = null;
    this.listener.on('connection', (socket) => {
      if (this.waiting) {
        const resolve = this.waiting;
        this.waiting = null;
        resolve(socket);
      } else {
        this.connections.push(socket);
      }
    });
    const connected = this.nextConnection();
    await new Promise((resolve) => this.listener.listen(socketPath, resolve));
    const relay = `${quote(process.execPath)} ${quote(path.join(__dirname, 'bridge.js'))} ${quote(socketPath)}`;
    this.logs = logs || path.join(this.scratch, 'logs');
    this.process = spawn(
      binary(),
      ['conform', '--adapter', relay, '--scenario', this.name, '--format', 'json', '--logs', this.logs],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.stdout = '';
    this.stderr = '';
    this.process.stdout.on('data', (chunk) => {
      this.stdout += chunk;
    });
    this.process.stderr.on('data', (chunk) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) => this.process.once('exit', resolve));
    const early = this.exited.then(() => null);
    const connection = await Promise.race([connected, early]);
    if (connection === null) {
      await this.cleanup();
      throw new Error(`ctxbed conform ended before its adapter started:\n${this.stdout}${this.stderr}`);
    }
    this.connection = connection;
    this.lines = new Lines(connection);
    this.env = (await this.read('env')).env;
    const setup = await this.read('setup');
    // The steps before which conform replaces the relay: a restart, not the scenario's end.
    this.restarts = new Set(setup.restarts || []);
    this.lastStep = 0;
    this.system = setup.system || '';
    this.tools = (setup.tools || []).map((spec) => new Tool(spec));
    this.ready = { type: 'ready', harness, version, context };
    this.send(this.ready);
    return this;
  }

  /** The next relay's connection: one already made, or the next to come. */
  nextConnection() {
    if (this.connections.length > 0) return Promise.resolve(this.connections.shift());
    return new Promise((resolve) => {
      this.waiting = resolve;
    });
  }

  /** conform replaced the relay (a restart): takes the new one's connection, reads its
   *  environment and `setup` again and answers `ready` as before. */
  async reconnect() {
    this.connection.end();
    const connection = await Promise.race([this.nextConnection(), this.exited.then(() => null)]);
    if (connection === null) throw new Error(`ctxbed conform ended during a restart:\n${this.stdout}${this.stderr}`);
    this.connection = connection;
    this.lines = new Lines(connection);
    this.env = (await this.read('env')).env;
    await this.read('setup');
    this.send(this.ready);
  }

  async read(kind) {
    const line = await this.lines.next();
    if (line === null) throw new Error(`the scenario ended while a \`${kind}\` line was awaited`);
    const message = JSON.parse(line);
    if (message.type !== kind) throw new Error(`expected a \`${kind}\` line, got ${line}`);
    return message;
  }

  send(message) {
    this.connection.write(`${JSON.stringify(message)}\n`);
  }

  /**
   * `openai` (OpenAI: Chat Completions or the Responses API, as the harness prefers),
   * `responses` (the scenario pins OpenAI's Responses API) or `anthropic` (Messages).
   */
  get api() {
    return this.env.CTXBED_API;
  }
  get openaiBaseUrl() {
    return this.env.CTXBED_OPENAI_BASE_URL;
  }
  get anthropicBaseUrl() {
    return this.env.CTXBED_ANTHROPIC_BASE_URL;
  }
  get model() {
    return this.env.CTXBED_MODEL;
  }
  get apiKey() {
    return this.env.CTXBED_API_KEY || 'ctxbed-test';
  }
  /** The model's context window in tokens, as a user would configure it. */
  get window() {
    return this.env.CTXBED_WINDOW ? Number(this.env.CTXBED_WINDOW) : null;
  }
  get maxOutputTokens() {
    return Number(this.env.CTXBED_MAX_OUTPUT_TOKENS || 1024);
  }
  get stream() {
    return this.env.CTXBED_STREAM === '1';
  }

  /** The scenario's tool `name`. */
  tool(name) {
    const tool = this.tools.find((t) => t.name === name);
    if (!tool) throw new Error(`the scenario has no tool ${name}`);
    return tool;
  }

  /** Each step in turn (`for await`); the next comes once the previous one is answered. Where
   *  the scenario restarts the harness, the next step says so (`restarted`). */
  async *steps() {
    let restarted = false;
    for (;;) {
      const line = await this.lines.next();
      if (line === null) {
        if (!this.restarts.has(this.lastStep + 1)) return;
        await this.reconnect();
        restarted = true;
        continue;
      }
      const message = JSON.parse(line);
      if (message.type !== 'step') throw new Error(`expected a \`step\` line, got ${line}`);
      this.lastStep = message.step;
      const run = this;
      const step = {
        number: message.step,
        input: message.input,
        session: message.session || '',
        user: message.user || '',
        images: message.images || [],
        restarted,
        reply(text) {
          run.send({ type: 'reply', step: message.step, text });
        },
        error(kind, text) {
          run.send({ type: 'error', step: message.step, kind, message: String(text).slice(0, 2000) });
        },
      };
      restarted = false;
      yield step;
    }
  }

  /** Ends the run (a step left unanswered fails it) and returns conform's verdict. */
  async finish() {
    if (this.verdict) return this.verdict;
    this.connection.end();
    await this.exited;
    const run = this.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .find((object) => object.type === 'run');
    if (!run) throw new Error(`ctxbed conform gave no verdict:\n${this.stdout}${this.stderr}`);
    const violations = run.violations.map((v) => ({ rule: v.rule, step: v.step, detail: v.detail }));
    if (run.problem) violations.unshift({ rule: 'adapter', step: null, detail: run.problem });
    this.verdict = { ...run, violations, report: describeViolations(violations, run.trace) };
    await this.cleanup();
    return this.verdict;
  }

  /** The broken rules (empty when the run passes); ends the run first. */
  async violations() {
    return (await this.finish()).violations;
  }

  /** Ends the run and throws `WireRuleViolation` if any wire rule was broken. */
  async check() {
    const verdict = await this.finish();
    if (verdict.violations.length > 0) {
      throw new WireRuleViolation(`${this.name}: ${verdict.report}`, verdict.violations);
    }
  }

  async cleanup() {
    if (this.connection) this.connection.destroy();
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill('SIGTERM');
      await this.exited;
    }
    await new Promise((resolve) => this.listener.close(() => resolve()));
    fs.rmSync(this.scratch, { recursive: true, force: true });
  }
}

function quote(text) {
  return `'${String(text).replace(/'/g, `'\\''`)}'`;
}

/**
 * Starts the built-in wire scenario `name` with the calling code as the harness: point your
 * agent at `run.openaiBaseUrl` (or `anthropicBaseUrl`, as `run.api` says), answer each of
 * `run.steps()`, then `await run.check()`.
 */
async function wireScenario(name, options) {
  return new WireRun(name).start(options);
}

/**
 * node:test helper: one test per named built-in wire scenario (every one when `names` is
 * empty), each given a started run; the run is checked after `body` unless `body` already
 * finished it. `harness`, `version` and `context` are what the run's `ready` line says (the
 * trace's header).
 */
function wireTests(names, body, { test = require('node:test').test, harness, version, context } = {}) {
  const chosen = names && names.length > 0 ? names : scenarios();
  for (const name of chosen) {
    test(name, async () => {
      const run = await wireScenario(name, { harness: harness || `node:${name}`, version, context });
      try {
        await body(run);
        if (!run.verdict) await run.check();
      } finally {
        if (!run.verdict) await run.cleanup();
      }
    });
  }
}

/**
 * The in-process adapter: runs each built-in wire scenario (every one when `scenarios` is
 * empty) against a JS callable and resolves to each verdict by name. `agentFactory(run)` is
 * called once per scenario with the started run and returns the agent: a function taking a
 * step and returning (or resolving to) its reply text. An error it throws answers the step as
 * an error, of the kind in its `ctxbedKind` property when it has one, else `other`.
 */
async function runConform(agentFactory, { scenarios: names = [], harness = 'node', version = '0', context = 'own' } = {}) {
  const chosen = names.length > 0 ? names : scenarios();
  const verdicts = {};
  for (const name of chosen) {
    const run = await wireScenario(name, { harness, version, context });
    try {
      let agent = await agentFactory(run);
      for await (const step of run.steps()) {
        // A new process would start here: the agent is built again.
        if (step.restarted) agent = await agentFactory(run);
        let reply;
        try {
          reply = await agent(step);
        } catch (error) {
          const kind = (error && error.ctxbedKind) || 'other';
          step.error(String(kind), `${(error && error.name) || 'Error'}: ${error && error.message}`);
          continue;
        }
        step.reply(String(reply));
      }
      verdicts[name] = await run.finish();
    } finally {
      if (!run.verdict) await run.cleanup();
    }
  }
  return verdicts;
}

module.exports = {
  Server,
  Tool,
  WireRun,
  WireRuleViolation,
  binary,
  conform: { run: runConform },
  scenarios,
  serve,
  wireScenario,
  wireTests,
};
