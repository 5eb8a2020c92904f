#!/usr/bin/env node
'use strict';
// `npx ctxbed ...`: runs the binary with the arguments given.
const { spawnSync } = require('node:child_process');
const { binary } = require('./binary');

const result = spawnSync(binary(), process.argv.slice(2), { stdio: 'inherit' });
process.exit(result.status === null ? 1 : result.status);
