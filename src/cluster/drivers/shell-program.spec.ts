import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { SH } from '../../../test/support/shell-run.js';
import { shellProgram } from './shell-program.js';

describe('the launch’s shell programs, as the hub passes them', () => {
  const files = readdirSync(new URL('sh/', import.meta.url)).filter((name) => name.endsWith('.sh'));

  it('are the four programs of sh/, each with its comment block at its top', () => {
    const tops = files.map((file) => readFileSync(new URL(`sh/${file}`, import.meta.url), 'utf8').split('\n', 3));
    expect({ files: files.sort(), commented: tops.every((lines) => lines.every((line) => line.startsWith('#'))) }).toEqual({
      files: ['launcher.sh', 'monitor.sh', 'slurm-job.sh', 'task-init.sh'],
      commented: true,
    });
  });

  it.each(['launcher.sh', 'monitor.sh', 'slurm-job.sh', 'task-init.sh'])('pass %s as its code alone, which sh parses', (file) => {
    const program = shellProgram(file);
    const lines = program.split('\n');
    // `sh -n` reads without running; it fails on a syntax error.
    execFileSync(SH, ['-n', '-c', program]);
    expect({
      comments: lines.filter((line, index) => /^\s*#/.test(line) && !(index === 0 && line.startsWith('#!'))),
      blank: lines.slice(0, -1).filter((line) => line.trim() === ''),
      shebang: lines[0] === '#!/bin/sh',
    }).toEqual({ comments: [], blank: [], shebang: file === 'slurm-job.sh' });
  });
});
