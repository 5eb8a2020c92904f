'use strict';
// A built-in wire scenario run with the calling code as its harness (`wireScenario`): `ctxbed
// conform` runs it with a small relay (bridge.js) as its adapter, and the test answers each step.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { binary } = require('./binary');
const { Lines } = require('./lines');

/** Raised by `WireRun.check()`: the run broke wire rules (the message says which, with trace). */
class WireRuleViolation extends Error {
  constructor(message, violations) {
    super(message);
    this.name = 'WireRuleViolation';
    this.code = 'ERR_ASSERTION';
    this.violations = violations;
  }
}

/** Thrown by `run.steps()` when the test's code takes the next step without answering the one
 *  it was given: conform fails that step at once. */
class UnansweredStep extends Error {
  constructor(message) {
    super(message);
    this.name = 'UnansweredStep';
    this.code = 'ERR_ASSERTION';
  }
}

/** A run ended without its verdict being read (`check()`, `violations()`, `finish()`). */
class UncheckedRun extends Error {
  constructor(message) {
    super(message);
    this.name = 'UncheckedRun';
    this.code = 'ERR_ASSERTION';
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

/** The readable report of a run's violations, and where its log is kept. */
function describeViolations(violations, trace, log) {
  if (violations.length === 0) return 'no wire rule broken';
  const lines = [`${violations.length} wire rule(s) broken:`];
  for (const v of violations) {
    lines.push(`  ${v.step === null ? 'scenario' : `step ${v.step}`}: ${v.rule}: ${v.detail}`);
  }
  const steps = [...new Set(violations.map((v) => v.step).filter((s) => s !== null))].sort((a, b) => a - b);
  const excerpt = traceExcerpt(trace, steps);
  if (excerpt) lines.push('', 'trace of the steps named:', excerpt);
  if (log) lines.push('', `adapter log: ${log} (the trace and the requests are beside it)`);
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

/** Runs started and not yet read or ended: reported when the process exits (see `watch`). */
const unread = new Set();

/** At exit, a run whose verdict nobody read fails the process (node --test then fails the
 *  file, with this message), and its conform is stopped. */
function watch(run) {
  if (unread.size === 0 && !watch.installed) {
    watch.installed = true;
    process.on('exit', () => {
      for (const each of unread) {
        process.stderr.write(`${each.uncheckedMessage('')}\n`);
        process.exitCode = 1;
        each.process.kill('SIGTERM');
      }
    });
  }
  unread.add(run);
}

/** A built-in wire scenario, running, with the calling code as its harness. */
class WireRun {
  constructor(name) {
    this.name = name;
    this.verdict = null;
    this.checked = false;
  }

  async start({ harness = 'node', version = '0', context = 'own', logs, assertChecked = true } = {}) {
    this.assertChecked = assertChecked;
    this.scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ctxbed-wire-'));
    const socketPath = path.join(this.scratch, 'bridge.sock');
    this.listen();
    const connected = this.nextConnection();
    await new Promise((resolve) => this.listener.listen(socketPath, resolve));
    // Waits on it are waits on conform too, whose process keeps node alive: a run left unread
    // must not keep it alive after conform has ended (its exit is where it is reported).
    this.listener.unref();
    const relay = `${quote(process.execPath)} ${quote(path.join(__dirname, 'bridge.js'))} ${quote(socketPath)}`;
    // Logs of our own choosing outlive the run only when it fails (then a failure names them).
    this.ownLogs = !logs;
    this.logs = logs || fs.mkdtempSync(path.join(os.tmpdir(), 'ctxbed-wire-logs-'));
    this.spawnConform(relay);
    const connection = await Promise.race([connected, this.exited.then(() => null)]);
    if (connection === null) {
      await this.cleanup();
      throw new Error(`ctxbed conform ended before its adapter started:\n${this.stdout}${this.stderr}`);
    }
    this.adopt(connection);
    this.env = (await this.read('env')).env;
    const setup = await this.read('setup');
    // The steps before which conform replaces the relay: a restart, not the scenario's end.
    this.restarts = new Set(setup.restarts || []);
    this.lastStep = 0;
    this.system = setup.system || '';
    this.tools = (setup.tools || []).map((spec) => new Tool(spec));
    this.ready = { type: 'ready', harness, version, context };
    this.send(this.ready);
    if (assertChecked) watch(this);
    return this;
  }

  /** Every relay conform starts (a second one after each restart) connects here, in turn. */
  listen() {
    this.listener = net.createServer();
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
  }

  spawnConform(relay) {
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
  }

  /** Reads the relay's lines from `connection` from now on. Its errors (the relay gone while a
   *  late answer is written) show as the end of its lines and conform's verdict. */
  adopt(connection) {
    connection.on('error', () => {});
    this.connection = connection;
    this.lines = new Lines(connection);
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
    this.adopt(connection);
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
    if (!this.connection.destroyed) this.connection.write(`${JSON.stringify(message)}\n`);
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
  /** Anthropic's extended thinking `budget_tokens`, when the scenario turns thinking on. */
  get thinkingBudget() {
    return this.env.CTXBED_THINKING_BUDGET ? Number(this.env.CTXBED_THINKING_BUDGET) : null;
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
   *  the scenario restarts the harness, the next step says so (`restarted`). A step the loop
   *  leaves unanswered fails at once (`UnansweredStep`), not at conform's step timeout. */
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
      const step = this.step(message, restarted);
      let resumed = false;
      try {
        yield step;
        resumed = true;
      } finally {
        // The loop was left (`break`, `return`, a throw in its body) with the step unanswered.
        if (!resumed && !step.answered) this.giveUp(step, "the test's loop over run.steps() ended");
      }
      if (!step.answered) {
        this.giveUp(step, "the test's code took the next step");
        throw new UnansweredStep(
          `${this.name}: step ${step.number} was not answered: call step.reply(text) or step.error(kind, message) for each step before taking the next`,
        );
      }
      restarted = false;
    }
  }

  step(message, restarted) {
    const run = this;
    return {
      number: message.step,
      input: message.input,
      session: message.session || '',
      user: message.user || '',
      images: message.images || [],
      restarted,
      answered: false,
      reply(text) {
        run.send({ type: 'reply', step: message.step, text });
        this.answered = true;
      },
      error(kind, text) {
        run.send({ type: 'error', step: message.step, kind, message: String(text).slice(0, 2000) });
        this.answered = true;
      },
    };
  }

  /** Tells conform the step will never be answered, and why (its trace says so). */
  giveUp(step, why) {
    const reason = `${why} without answering it (step.reply or step.error was never called)`;
    this.send({ type: 'unanswered', step: step.number, reason });
  }

  /** Ends the run (a step left unanswered fails it) and returns conform's verdict. */
  async finish() {
    this.checked = true;
    unread.delete(this);
    if (this.verdict) return this.verdict;
    // Half-closed, so a reply still being written reaches the relay first.
    this.connection.end();
    await this.exited;
    const run = this.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .find((object) => object.type === 'run');
    if (!run) {
      await this.cleanup();
      throw new Error(`ctxbed conform gave no verdict:\n${this.stdout}${this.stderr}`);
    }
    const violations = run.violations.map((v) => ({ rule: v.rule, step: v.step, detail: v.detail }));
    if (run.problem) violations.unshift({ rule: 'adapter', step: null, detail: run.problem });
    // The log is named only where it is kept: under your `logs`, or for a run that failed.
    const log = run.ok && this.ownLogs ? null : run.log;
    this.verdict = { ...run, log, violations, report: describeViolations(violations, run.trace, log) };
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

  /** Throws `UncheckedRun` when the verdict was never read and `assertChecked` is on (the
   *  vitest entry point calls it when a test that passed finishes); the message gives
   *  conform's verdict, which nothing else would show. */
  async assertWasChecked() {
    if (this.checked || !this.assertChecked) return;
    const verdict = await this.finish();
    const shown = verdict.ok ? 'pass' : `fail\n${verdict.report}`;
    throw new UncheckedRun(this.uncheckedMessage(`\nconform's verdict: ${shown}`));
  }

  uncheckedMessage(verdict) {
    return (
      `${this.name}: the run's verdict was never checked, so this test passes whatever the harness sends. ` +
      'End the test with `await run.check()` (or assert on `await run.violations()`), or use `wireTests`, ' +
      'which checks for you; to leave a run unchecked on purpose, pass `{ assertChecked: false }` to ' +
      `\`wireScenario\`.${verdict}`
    );
  }

  /** Stops conform (if it still runs) and removes what the run kept, but the logs of a run
   *  that failed. Safe to call twice. */
  async cleanup() {
    unread.delete(this);
    if (this.connection) this.connection.destroy();
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill('SIGTERM');
      await this.exited;
    }
    if (this.listener.listening) await new Promise((resolve) => this.listener.close(() => resolve()));
    fs.rmSync(this.scratch, { recursive: true, force: true });
    if (this.ownLogs && !(this.verdict && !this.verdict.ok)) {
      fs.rmSync(this.logs, { recursive: true, force: true });
    }
  }
}

function quote(text) {
  return `'${String(text).replace(/'/g, `'\\''`)}'`;
}

/**
 * Starts the built-in wire scenario `name` with the calling code as the harness: point your
 * agent at `run.openaiBaseUrl` (or `anthropicBaseUrl`, as `run.api` says), answer each of
 * `run.steps()`, then `await run.check()`. A run whose verdict is never read fails the process
 * at exit (node --test fails the file), unless `{ assertChecked: false }`.
 */
async function wireScenario(name, options) {
  return new WireRun(name).start(options);
}

module.exports = { Tool, UncheckedRun, UnansweredStep, WireRuleViolation, WireRun, wireScenario };
