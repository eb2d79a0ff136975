import { readFileSync } from 'node:fs';
import { sourceFile } from '../../common/source-files.js';

/** A line that is a comment (a ShellCheck directive too), or blank. */
const COMMENT_OR_BLANK = /^\s*(#.*)?$/;

/**
 * One of the launch's shell programs (`sh/<file>`, beside this module in src/ and, copied by the
 * build, in dist/src/: see nest-cli.json), as the hub passes it: read once, when the module that runs
 * it is loaded. Its whole-line comments and blank lines are left out, a first `#!` line kept: the
 * comments are for the program's readers, and the hub passes its code alone (the task's init is
 * an argument of every launch). None of the programs has a string that spans lines with a `#` at
 * the start of one.
 */
export function shellProgram(file: string): string {
  const lines = readFileSync(sourceFile(`cluster/drivers/sh/${file}`), 'utf8').split('\n');
  return lines
    .filter((line, index) => (index === 0 && line.startsWith('#!')) || !COMMENT_OR_BLANK.test(line))
    .map((line) => `${line}\n`)
    .join('');
}
