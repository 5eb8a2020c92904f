'use strict';
// Where the ctxbed binary is: CTXBED_BIN when set, else the per-platform package's.

const fs = require('node:fs');

/** The platform packages, by `${process.platform}-${process.arch}`. */
const PLATFORM_PACKAGES = {
  'linux-x64': '@ctxbed/linux-x64',
};

function binary() {
  const chosen = process.env.CTXBED_BIN;
  if (chosen) {
    try {
      fs.accessSync(chosen, fs.constants.X_OK);
    } catch {
      throw new Error(`CTXBED_BIN=${chosen} is not an executable file`);
    }
    return chosen;
  }
  const platform = `${process.platform}-${process.arch}`;
  const name = PLATFORM_PACKAGES[platform];
  if (!name) {
    throw new Error(
      `ctxbed has no binary package for ${platform} (it has: ${Object.keys(PLATFORM_PACKAGES).join(', ')}); build ctxbed and set CTXBED_BIN`,
    );
  }
  try {
    return require.resolve(`${name}/bin/ctxbed`);
  } catch {
    throw new Error(
      `the ctxbed binary package ${name} is not installed (an optional dependency of ctxbed: was it installed with --no-optional?); reinstall ctxbed or set CTXBED_BIN`,
    );
  }
}

module.exports = { binary, PLATFORM_PACKAGES };
