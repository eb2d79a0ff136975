// What judging a user's host account costs at each submission (issue 25, docs/security.md "Judged
// at each submission"): the first look after a change spawns getent and id; every other reads two
// stat results. `nest build && node dist/bench/job-identity.js` (as root: it makes an account).
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { HostAccounts } from '../src/cluster/host-accounts.js';

const ACCOUNT = `hubbench-${process.pid % 100000}`;
const FORBIDDEN = ['root', 'sudo', 'wheel', 'adm', 'disk', 'docker', 'lxd', 'libvirt', 'kvm', 'shadow'];
const LOOKS = 20_000;

function microseconds(started: bigint, count: number): string {
  return (Number(process.hrtime.bigint() - started) / count / 1000).toFixed(1);
}

async function main(): Promise<void> {
  execFileSync('useradd', ['--no-create-home', '--shell', '/bin/sh', ACCOUNT], { stdio: 'ignore' });
  try {
    for (let run = 1; run <= 3; run++) {
      const accounts = new HostAccounts(FORBIDDEN);
      let started = process.hrtime.bigint();
      await accounts.facts(ACCOUNT);
      const cold = microseconds(started, 1000);
      started = process.hrtime.bigint();
      for (let look = 0; look < LOOKS; look++) await accounts.facts(ACCOUNT);
      const cached = microseconds(started, LOOKS);
      started = process.hrtime.bigint();
      for (let look = 0; look < LOOKS; look++) for (const path of ['/etc/passwd', '/etc/group']) statSync(path);
      console.log(`run ${run}: first look ${cold} ms; each later look ${cached} µs, of which the two stat calls ${microseconds(started, LOOKS)} µs`);
    }
  } finally {
    execFileSync('userdel', [ACCOUNT], { stdio: 'ignore' });
  }
}

void main();
