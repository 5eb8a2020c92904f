// ctxbed peer adapter for the pi coding agent CLI (`@mariozechner/pi-coding-agent`), a CLI row:
// pi runs as a user runs it, `pi -p` once per step, in a fresh home and working directory per
// scenario, with its own tools (read, bash, edit, write). The scenario's scripted tool results
// are files in the working directory, `ctxbed-tools/<tool>-<n>.txt`, which the mock asks pi to
// read with the tool pi offers for it (see docs/peer-protocol.md, "CLI rows"). Each run of pi is
// the leader of its own process group, killed as a whole when the step is over, on a reset and
// when this adapter's input closes.

import { Console } from 'node:console';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const send = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });

const here = dirname(fileURLToPath(import.meta.url));
const PI = join(here, 'node_modules', '.bin', 'pi');
const PACKAGE = join(here, 'node_modules', '@mariozechner', 'pi-coding-agent', 'package.json');
const version = JSON.parse(readFileSync(PACKAGE, 'utf8')).version;
const env = process.env;

const PROTOCOL_VARIABLES = [
  'CTXBED_API', 'CTXBED_OPENAI_BASE_URL', 'CTXBED_ANTHROPIC_BASE_URL', 'CTXBED_MODEL', 'CTXBED_API_KEY',
  'CTXBED_WINDOW', 'CTXBED_MAX_OUTPUT_TOKENS', 'CTXBED_THINKING_BUDGET', 'CTXBED_STREAM', 'CTXBED_STATE_DIR',
  'CTXBED_BIN', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'NO_PROXY', 'no_proxy',
];

/** What pi sends before any input: its own system prompt and its four tools' definitions,
 *  about 1,030 tokens (o200k, measured against the mock with an empty system prompt). A window
 *  below it cannot hold a single request of pi's. */
const PI_FIXED_TOKENS = 1030;

/** pi's API name for the protocol's. */
const PI_APIS = { openai: 'openai-completions', responses: 'openai-responses', anthropic: 'anthropic-messages' };

/** The scenario being served: its directories, system prompt and the pi run in progress. */
let scenario = null;
let running = null;

/** Kills the pi run in progress, its whole process group. */
function killRunning() {
  if (running) {
    try { process.kill(-running.pid, 'SIGKILL'); } catch { /* already gone */ }
    running = null;
  }
}

/** Where every scenario's directories are: a fixed path, not the machine's temporary directory
 *  or the checkout, because pi writes its working directory and its package's path into its
 *  system prompt, and the request must be the same on every machine. */
const BASE = '/tmp/ctxbed-pi';

/** Takes the first free slot `BASE/<n>` (a directory whose `pid` file names a live process
 *  is taken): one per adapter process, so runs side by side never share a directory. The scan
 *  and the claim happen under `BASE/lock`, so two adapters starting at once (the first two jobs
 *  of `conform --jobs 2`) cannot both see a slot free, nor take a slot the other has made but
 *  not yet signed with its pid. */
function takeSlot() {
  mkdirSync(BASE, { recursive: true });
  return withLock(join(BASE, 'lock'), () => {
    for (let n = 1; ; n += 1) {
      const slot = join(BASE, String(n));
      let owner = 0;
      try { owner = Number(readFileSync(join(slot, 'pid'), 'utf8')); } catch { /* free or half made */ }
      if (owner && owner !== process.pid && alive(owner)) continue;
      rmSync(slot, { recursive: true, force: true });
      mkdirSync(slot);
      writeFileSync(join(slot, 'pid'), String(process.pid));
      return slot;
    }
  });
}

/** Runs `work` holding the lock file `path` (created exclusively, holding the holder's pid).
 *  A lock whose holder is no longer alive, or that no pid was written to within a second, was
 *  left by a crash and is taken over. */
function withLock(path, work) {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let unsigned = 0; ;) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      let holder = 0;
      try { holder = Number(readFileSync(path, 'utf8')); } catch { /* just released */ }
      unsigned = holder ? 0 : unsigned + 1;
      if ((holder && !alive(holder)) || unsigned > 100) rmSync(path, { force: true });
      Atomics.wait(pause, 0, 0, 10);
    }
  }
  try {
    return work();
  } finally {
    rmSync(path, { force: true });
  }
}

function alive(pid) {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

/** pi's clock, preloaded into it: the day it writes into its system prompt (`Current date`) is
 *  always 2026-01-01 (UTC), so the prompt does not change with the day of the run; time still
 *  passes from there. */
const CLOCK = `const Real = Date; const start = Real.now(); const base = Real.UTC(2026, 0, 1, 12);
const now = () => base + (Real.now() - start);
class FixedDay extends Real { constructor(...args) { if (args.length === 0) super(now()); else super(...args); } static now() { return now(); } }
globalThis.Date = FixedDay;
`;

/** The scenario's directories in this process's slot: a fresh home (pi's package linked into
 *  it, as `PI_PACKAGE_DIR=~/pi`), a fresh working directory, and the sessions, kept under
 *  CTXBED_STATE_DIR when the scenario restarts pi (they must outlive this process). */
function scenarioDirs() {
  const slot = takeSlot();
  for (const name of ['home', 'work', 'sessions']) rmSync(join(slot, name), { recursive: true, force: true });
  const home = join(slot, 'home');
  mkdirSync(home, { recursive: true });
  symlinkSync(dirname(PACKAGE), join(home, 'pi'));
  writeFileSync(join(slot, 'clock.mjs'), CLOCK);
  let sessions = join(slot, 'sessions');
  if (env.CTXBED_STATE_DIR) sessions = join(env.CTXBED_STATE_DIR, 'pi-sessions');
  mkdirSync(sessions, { recursive: true });
  return { slot, home, work: join(slot, 'work'), sessions, clock: join(slot, 'clock.mjs') };
}

/** Writes each tool's scripted results as files: the n-th call reads `<tool>-<n>.txt`. A pi
 *  tool cannot be made to fail, so an error result is its text alone. */
function writeResults(work, tools) {
  const dir = join(work, 'ctxbed-tools');
  mkdirSync(dir, { recursive: true });
  for (const tool of tools ?? []) {
    const results = tool.results?.length ? tool.results : [{ text: '', error: false }];
    results.forEach((result, index) => writeFileSync(join(dir, `${tool.name}-${index + 1}.txt`), result.text));
  }
}

/** pi's configuration in a fresh home: one provider, the mock, with the scenario's model. */
function writeConfig(agentDir) {
  mkdirSync(agentDir, { recursive: true });
  const api = PI_APIS[env.CTXBED_API];
  const baseUrl = env.CTXBED_API === 'anthropic' ? env.CTXBED_ANTHROPIC_BASE_URL : env.CTXBED_OPENAI_BASE_URL;
  const window = Number(env.CTXBED_WINDOW ?? 128000);
  const maxTokens = Number(env.CTXBED_MAX_OUTPUT_TOKENS ?? 4096);
  const models = {
    providers: {
      ctxbed: {
        baseUrl, api, apiKey: env.CTXBED_API_KEY ?? 'ctxbed-test',
        models: [{
          id: env.CTXBED_MODEL, name: env.CTXBED_MODEL, reasoning: false, input: ['text', 'image'],
          contextWindow: window, maxTokens, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        }],
      },
    },
  };
  // Compaction as the settings docs define it: `reserveTokens` is what the reply needs (the
  // output budget); `keepRecentTokens`' default (20k) assumes a large window, so a quarter of it.
  const settings = {
    compaction: { enabled: true, reserveTokens: maxTokens, keepRecentTokens: Math.floor(window / 4) },
    quietStartup: true,
  };
  writeFileSync(join(agentDir, 'models.json'), JSON.stringify(models, null, 2));
  writeFileSync(join(agentDir, 'settings.json'), JSON.stringify(settings, null, 2));
}

function setup(msg) {
  if (!PI_APIS[env.CTXBED_API]) return { type: 'unsupported', reason: `pi has no API for CTXBED_API=${env.CTXBED_API}`, reset: true };
  if (env.CTXBED_THINKING_BUDGET) {
    return { type: 'unsupported', reason: 'pi sets thinking by level (--thinking), not by a budget_tokens', reset: true };
  }
  if (Number(env.CTXBED_WINDOW) < PI_FIXED_TOKENS) {
    return { type: 'unsupported', reason: `the ${env.CTXBED_WINDOW}-token window is below pi's floor: its own system prompt and tools take about ${PI_FIXED_TOKENS} tokens before any input`, reset: true };
  }
  const dirs = scenarioDirs();
  mkdirSync(dirs.work, { recursive: true });
  writeResults(dirs.work, msg.tools);
  const agentDir = join(dirs.home, '.pi', 'agent');
  writeConfig(agentDir);
  scenario = { ...dirs, agentDir, system: msg.system ?? '' };
  return { type: 'ready', harness: 'pi', version, kind: 'cli', context: 'own', reset: true };
}

/** The session's own directory: a session name is a directory of pi's sessions, continued with
 *  `--continue` once it holds one. */
function sessionArgs(name) {
  const dir = join(scenario.sessions, String(name).replace(/[^A-Za-z0-9_.-]/g, '_'));
  mkdirSync(dir, { recursive: true });
  const started = readdirSync(dir).some((file) => file.endsWith('.jsonl'));
  return ['--session-dir', dir, ...(started ? ['--continue'] : [])];
}

/** The step's images as files in the working directory, attached as pi attaches files (`@path`). */
function imageArgs(msg) {
  return (msg.images ?? []).map((image, index) => {
    const file = join('ctxbed-images', `step-${msg.step}-${index + 1}.png`);
    mkdirSync(join(scenario.work, 'ctxbed-images'), { recursive: true });
    writeFileSync(join(scenario.work, file), Buffer.from(image.data, 'base64'));
    return `@${file}`;
  });
}

/** The protocol's reading of pi's failure text. */
function errorKind(text) {
  if (/context.length|context_length|maximum context|context limit|context window|too many tokens|prompt is too long/i.test(text)) return 'context_overflow';
  if (/\b429\b|rate.limit/i.test(text)) return 'rate_limited';
  if (/timed? ?out|timeout/i.test(text)) return 'timeout';
  if (/\b[45]\d\d\b/.test(text)) return 'provider_error';
  return 'other';
}

/** The text of an assistant message's text parts. */
function textOf(message) {
  return (message?.content ?? []).filter((part) => part.type === 'text').map((part) => part.text).join('').trim();
}

/** The step's answer from pi's JSON event stream: its last assistant message's text, or the
 *  error that message (or pi) reports. */
function answer(step, events, code, err) {
  const ended = events.filter((event) => event.type === 'message_end' && event.message?.role === 'assistant');
  const last = ended.at(-1)?.message;
  if (last && last.stopReason !== 'error' && last.stopReason !== 'aborted' && textOf(last)) {
    return { type: 'reply', step, text: textOf(last) };
  }
  const message = (last?.errorMessage || err.trim() || `pi exited with ${code} without an answer`).slice(0, 2000);
  return { type: 'error', step, kind: errorKind(message), message };
}

/** Runs `pi -p --mode json` for one step in its own process group; its final text answers
 *  the step. */
function step(msg) {
  const args = ['-p', '--mode', 'json', '--provider', 'ctxbed', '--model', env.CTXBED_MODEL, ...sessionArgs(msg.session)];
  if (scenario.system) args.push('--append-system-prompt', scenario.system);
  args.push(...imageArgs(msg), msg.input);
  const childEnv = {
    ...env, HOME: scenario.home, PI_CODING_AGENT_DIR: scenario.agentDir, PI_PACKAGE_DIR: '~/pi', TZ: 'UTC',
    NODE_OPTIONS: `--import ${pathToFileURL(scenario.clock)}`,
  };
  return new Promise((resolve) => {
    const child = spawn(PI, args, { cwd: scenario.work, env: childEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    running = child;
    const events = [];
    let err = '';
    createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', (line) => {
      try { events.push(JSON.parse(line)); } catch { console.error(`pi: ${line}`); }
    });
    child.stderr.on('data', (chunk) => { err += chunk; process.stderr.write(chunk); });
    child.on('error', (error) => resolve({ type: 'error', step: msg.step, kind: 'other', message: String(error).slice(0, 2000) }));
    child.on('close', (code) => {
      if (running === child) killRunning();
      for (const event of events) {
        if (event.type === 'compaction_end' || event.type === 'auto_retry_start' || event.type === 'auto_retry_end') {
          console.error(`pi ${event.type}: ${JSON.stringify({ ...event, result: undefined })}`);
        }
      }
      resolve(answer(msg.step, events, code, err));
    });
  });
}

function forget() {
  killRunning();
  if (scenario) rmSync(scenario.slot, { recursive: true, force: true });
  scenario = null;
}

process.on('exit', () => killRunning());
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.type === 'setup') send(setup(msg));
  else if (msg.type === 'step') send(await step(msg));
  else if (msg.type === 'reset') {
    forget();
    for (const name of PROTOCOL_VARIABLES) delete env[name];
    Object.assign(env, msg.env ?? {});
  }
}
forget();
