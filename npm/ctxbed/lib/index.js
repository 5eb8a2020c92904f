'use strict';
// ctxbed for node: a deterministic mock model on loopback (`serve`), built-in wire scenarios
// run with the calling test as the harness (`wireScenario`), and node:test helpers (`wireTests`).
// The binary does the work; no rule is computed here: every verdict is `ctxbed conform`'s.

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { binary } = require('./binary');
const { dumps: tomlDumps } = require('./toml');
const { Lines } = require('./lines');
const { Tool, UncheckedRun, UnansweredStep, WireRuleViolation, WireRun, wireScenario } = require('./wire');

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

/**
 * node:test helper: one test per named built-in wire scenario (every one when `names` is
 * empty), each given a started run; the run is checked after `body` unless `body` already
 * finished it. `harness`, `version` and `context` are what the run's `ready` line says (the
 * trace's header). When conform fails the run while `body` still runs (a step it gave up on
 * after its step timeout), the test fails at once with that verdict.
 */
function wireTests(names, body, { test = require('node:test').test, harness, version, context } = {}) {
  const chosen = names && names.length > 0 ? names : scenarios();
  for (const name of chosen) {
    test(name, async () => {
      const run = await wireScenario(name, { harness: harness || `node:${name}`, version, context });
      try {
        await untilBodyOrFailure(run, body);
        if (!run.verdict) await run.check();
      } finally {
        if (!run.verdict) await run.cleanup();
      }
    });
  }
}

/** How long `body` may still take once conform has ended the run, before a failing verdict is
 *  thrown without it (a body that answered the last step finishes well within this). */
const BODY_GRACE_MS = 5_000;

/** Waits for `body(run)`. If conform ends the run first and `body` is still running
 *  `BODY_GRACE_MS` later (stuck in a call conform gave up on), a failing verdict is thrown at
 *  once instead of waiting for the runner's timeout. */
async function untilBodyOrFailure(run, body) {
  const done = Promise.resolve().then(() => body(run));
  done.catch(() => {}); // its rejection is awaited below, or moot once conform failed the run
  const ended = run.exited.then(() => new Promise((resolve) => setTimeout(resolve, BODY_GRACE_MS).unref()));
  const first = await Promise.race([done.then(() => 'body'), ended.then(() => 'conform')]);
  if (first === 'conform') {
    const verdict = await run.finish();
    if (!verdict.ok) await run.check();
  }
  await done;
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
  UncheckedRun,
  UnansweredStep,
  WireRun,
  WireRuleViolation,
  binary,
  conform: { run: runConform },
  scenarios,
  serve,
  wireScenario,
  wireTests,
};
