'use strict';
// A mock model given as an object written as the TOML file `ctxbed serve` reads: every
// top-level key on its own line (so a diagnostic's line names the key), tables and arrays
// inline, strings as JSON strings (valid TOML basic strings).

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

function key(name) {
  return BARE_KEY.test(name) ? name : JSON.stringify(name);
}

function value(item, at) {
  if (item === null || item === undefined) {
    throw new TypeError(`${at}: TOML has no null; leave the key out instead`);
  }
  if (typeof item === 'boolean') return item ? 'true' : 'false';
  if (typeof item === 'number') {
    if (!Number.isFinite(item)) throw new TypeError(`${at}: ${item} is not a finite number`);
    return String(item);
  }
  if (typeof item === 'string') return JSON.stringify(item);
  if (Array.isArray(item)) return `[${item.map((v, i) => value(v, `${at}[${i}]`)).join(', ')}]`;
  if (typeof item === 'object') {
    const entries = Object.entries(item).map(([k, v]) => `${key(k)} = ${value(v, `${at}.${k}`)}`);
    return entries.length > 0 ? `{ ${entries.join(', ')} }` : '{}';
  }
  throw new TypeError(`${at}: a ${typeof item} cannot be written as TOML`);
}

/** `document` (a plain object) as TOML text; a TypeError names the path of a value TOML cannot hold. */
function dumps(document) {
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new TypeError('a mock model is an object (a TOML table)');
  }
  return `${Object.entries(document).map(([k, v]) => `${key(k)} = ${value(v, k)}`).join('\n')}\n`;
}

module.exports = { dumps };
