import { execFileSync } from 'node:child_process';

/** An unprivileged system account the hub runs something as, when the hub itself runs as root. */
export interface SystemAccount {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

function lookUp(name: string): SystemAccount {
  return {
    name,
    uid: Number(execFileSync('id', ['-u', name], { encoding: 'utf8', stdio: 'pipe' }).trim()),
    gid: Number(execFileSync('id', ['-g', name], { encoding: 'utf8', stdio: 'pipe' }).trim()),
  };
}

/**
 * The system account `name` (a user and its group, no home, no shell), created when missing;
 * undefined when the hub does not run as root (it then cannot switch users). Throws with the
 * reason when the account can neither be found nor created.
 */
export function systemAccount(name: string, onCreate: () => void): SystemAccount | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    return lookUp(name);
  } catch {
    onCreate();
  }
  execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', name], {
    stdio: 'pipe',
  });
  return lookUp(name);
}
