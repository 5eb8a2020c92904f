'use strict';
// The adapter `ctxbed conform` runs for a node test: it relays the peer protocol between conform
// (its standard input and output) and the test's process (a Unix socket), so the test itself
// answers each step. Its first line to the test is the environment conform gave it.

const net = require('node:net');

const socket = net.createConnection(process.argv[2], () => {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('CTXBED_')) env[key] = value;
  }
  socket.write(`${JSON.stringify({ type: 'env', env })}\n`);
  process.stdin.pipe(socket, { end: false });
});
socket.pipe(process.stdout);
// conform closed our input: every step was answered, so the relay ends at once.
process.stdin.on('end', () => {
  socket.end();
  process.exit(0);
});
// The test ended the run.
socket.on('end', () => process.exit(0));
socket.on('error', (error) => {
  process.stderr.write(`ctxbed bridge: ${error.message}\n`);
  process.exit(1);
});
