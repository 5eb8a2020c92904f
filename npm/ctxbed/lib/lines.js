'use strict';
// Reads newline-terminated lines from a stream, one promise at a time.

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

module.exports = { Lines };
