import { dirname, basename } from 'node:path';
import { describe, expect, it, jest } from '@jest/globals';
import { cgroupMounts, EXECUTIONS_GROUP, ExecutionCgroups, ownGroups, type CgroupFs, type CgroupView } from './cgroups.js';

function failure(code: string, path: string): Error {
  return Object.assign(new Error(`${code}: ${path}`), { code });
}

/**
 * cgroup v2 as the kernel keeps it, for what the hub does with it: a group's controllers are
 * those its parent enables; a group that enables controllers holds no process, and one that holds
 * processes enables none (the root of the hierarchy excepted); moving a pid takes it from its
 * group; a group with processes or children cannot be removed; the interface files of a
 * controller exist where the parent enables it.
 */
class CgroupV2 implements CgroupFs {
  readonly groups = new Map<string, { procs: Set<string>; subtree: Set<string>; files: Map<string, string> }>();

  constructor(
    readonly mountPoint: string,
    /** Whether the mount shows the hierarchy's real root (a container's cgroup namespace shows a group of it). */
    private readonly realRoot: boolean,
    private readonly offered = ['cpu', 'io', 'memory', 'pids'],
  ) {
    this.mkdir(mountPoint);
  }

  private group(path: string) {
    const group = this.groups.get(path);
    if (!group) throw failure('ENOENT', path);
    return group;
  }

  private controllers(path: string): string[] {
    return path === this.mountPoint ? this.offered : [...this.group(dirname(path)).subtree];
  }

  private isRoot(path: string): boolean {
    return path === this.mountPoint && this.realRoot;
  }

  read(path: string): string {
    const [dir, name] = [dirname(path), basename(path)];
    const group = this.group(dir);
    if (name === 'cgroup.controllers') return `${this.controllers(dir).join(' ')}\n`;
    if (name === 'cgroup.subtree_control') return `${[...group.subtree].join(' ')}\n`;
    if (name === 'cgroup.procs') return [...group.procs].map((pid) => `${pid}\n`).join('');
    if (name === 'cgroup.type' && !this.isRoot(dir)) return 'domain\n';
    const file = group.files.get(name);
    if (file === undefined) throw failure('ENOENT', path);
    return file;
  }

  write(path: string, text: string): void {
    const [dir, name] = [dirname(path), basename(path)];
    const group = this.group(dir);
    if (name === 'cgroup.procs') {
      if (group.subtree.size > 0 && !this.isRoot(dir)) throw failure('EBUSY', path);
      for (const other of this.groups.values()) other.procs.delete(text.trim());
      group.procs.add(text.trim());
    } else if (name === 'cgroup.subtree_control') {
      for (const word of text.split(' ')) {
        const controller = word.slice(1);
        if (!this.controllers(dir).includes(controller)) throw failure('ENOENT', path);
        if (group.procs.size > 0 && !this.isRoot(dir)) throw failure('EBUSY', path);
        group.subtree.add(controller);
      }
    } else {
      const controller = name.split('.')[0];
      if (dir === this.mountPoint || !this.controllers(dir).includes(controller)) throw failure('ENOENT', path);
      group.files.set(name, text);
    }
  }

  mkdir(path: string): void {
    if (!this.groups.has(path)) this.groups.set(path, { procs: new Set(), subtree: new Set(), files: new Map() });
  }

  /** Asynchronous, as the host's: the group goes a turn later. */
  async rmdir(path: string): Promise<void> {
    await Promise.resolve();
    const group = this.group(path);
    if (group.procs.size > 0 || [...this.groups.keys()].some((other) => dirname(other) === path && other !== path)) throw failure('EBUSY', path);
    this.groups.delete(path);
  }

  exists(path: string): boolean {
    if (this.groups.has(path)) return true;
    try {
      this.read(path);
      return true;
    } catch {
      return false;
    }
  }

  /** The groups below the mount point with their processes and enabled controllers. */
  layout(): Record<string, string> {
    return Object.fromEntries(
      [...this.groups].map(([path, group]) => [
        path.slice(this.mountPoint.length) || '/',
        `procs ${[...group.procs].join(',')}; enables ${[...group.subtree].join(',')}`,
      ]),
    );
  }
}

const V2_MOUNTINFO = '25 21 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n';
const v2View = (fs: CgroupFs, group: string): CgroupView => ({ fs, procSelfCgroup: `0::${group}\n`, mountinfo: V2_MOUNTINFO });

/** A v2 host where the hub runs in a systemd service's group with another process of its service (PostgreSQL, say). */
function serviceHost(delegated = true): CgroupV2 {
  const fs = new CgroupV2('/sys/fs/cgroup', true);
  fs.mkdir('/sys/fs/cgroup/system.slice');
  fs.write('/sys/fs/cgroup/cgroup.subtree_control', '+memory +pids');
  fs.write('/sys/fs/cgroup/system.slice/cgroup.subtree_control', delegated ? '+memory +pids' : '+pids');
  fs.mkdir('/sys/fs/cgroup/system.slice/hub.service');
  fs.write('/sys/fs/cgroup/system.slice/hub.service/cgroup.procs', '100');
  fs.write('/sys/fs/cgroup/system.slice/hub.service/cgroup.procs', '101');
  return fs;
}

describe('the control groups of executions on cgroup v2', () => {
  it('moves the processes of the hub’s group into a child of their own, and makes the executions’ groups below the hub’s group', async () => {
    const fs = serviceHost();
    const detected = ExecutionCgroups.detect(v2View(fs, '/system.slice/hub.service'));
    if (!('cgroups' in detected)) throw new Error(detected.problem);
    expect(detected.cgroups.pids).toBe(`/sys/fs/cgroup/system.slice/hub.service/${EXECUTIONS_GROUP}`);
    expect(detected.cgroups.memory).toBe(detected.cgroups.pids);
    expect(fs.layout()).toMatchObject({
      '/system.slice/hub.service': 'procs ; enables pids,memory',
      '/system.slice/hub.service/hub': 'procs 100,101; enables ',
      [`/system.slice/hub.service/${EXECUTIONS_GROUP}`]: 'procs ; enables pids,memory',
    });
    // An execution's group takes its limits, and the launch joins it.
    expect(await detected.cgroups.create('e1', { maxProcesses: 10, maxMemoryMiB: 64 })).toEqual([`${detected.cgroups.pids}/e1/cgroup.procs`]);
    const group = fs.groups.get(`${detected.cgroups.pids}/e1`);
    expect(Object.fromEntries(group?.files ?? [])).toEqual({ 'pids.max': '12', 'memory.max': String(64 * 1024 * 1024), 'memory.swap.max': '0' });
    fs.write(`${detected.cgroups.pids}/e1/cgroup.procs`, '200');
    group?.files.set('memory.events', 'low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n');
    expect(detected.cgroups.exceeded('e1', { maxProcesses: 10, maxMemoryMiB: 64 })).toBe('maxMemoryMiB');
    fs.write('/sys/fs/cgroup/system.slice/hub.service/hub/cgroup.procs', '200');
    await detected.cgroups.remove('e1');
    expect(fs.groups.has(`${detected.cgroups.pids}/e1`)).toBe(false);
  });

  it('retries a busy group’s removal later, and a new launch of the same execution cancels it before making its groups', async () => {
    jest.useFakeTimers();
    try {
      const fs = serviceHost();
      const detected = ExecutionCgroups.detect(v2View(fs, '/system.slice/hub.service'));
      if (!('cgroups' in detected)) throw new Error(detected.problem);
      const group = `${detected.cgroups.pids}/e1`;
      await detected.cgroups.create('e1', { maxProcesses: 10 });
      fs.write(`${group}/cgroup.procs`, '300');
      // Its last process still ending: busy, tried again later.
      await detected.cgroups.remove('e1');
      expect(fs.groups.has(group)).toBe(true);
      fs.write('/sys/fs/cgroup/system.slice/hub.service/hub/cgroup.procs', '300');
      // Launched again before the retry: the retry is cancelled, and its group stays.
      await detected.cgroups.create('e1', { maxProcesses: 10 });
      await jest.advanceTimersByTimeAsync(60_000);
      expect(fs.groups.has(group)).toBe(true);
      // Removed once its launch is done.
      await detected.cgroups.remove('e1');
      expect(fs.groups.has(group)).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });

  it('keeps the child it (or its service manager) put the hub in before, rather than nesting another', () => {
    const fs = serviceHost();
    const first = ExecutionCgroups.detect(v2View(fs, '/system.slice/hub.service'));
    const again = ExecutionCgroups.detect(v2View(fs, '/system.slice/hub.service/hub'));
    expect('cgroups' in again && again.cgroups.pids).toBe('cgroups' in first && first.cgroups.pids);
    expect(fs.groups.has('/sys/fs/cgroup/system.slice/hub.service/hub/hub')).toBe(false);
  });

  it('moves nothing at the root of the hierarchy, which may hold processes and enable controllers at once', () => {
    const fs = new CgroupV2('/sys/fs/cgroup', true);
    fs.write('/sys/fs/cgroup/cgroup.procs', '1');
    const detected = ExecutionCgroups.detect(v2View(fs, '/'));
    expect('cgroups' in detected && detected.cgroups.pids).toBe(`/sys/fs/cgroup/${EXECUTIONS_GROUP}`);
    expect(fs.layout()).toMatchObject({ '/': 'procs 1; enables pids,memory', [`/${EXECUTIONS_GROUP}`]: 'procs ; enables pids,memory' });
  });

  it('moves the processes of a container’s root group, which is not the hierarchy’s', () => {
    const fs = new CgroupV2('/sys/fs/cgroup', false);
    fs.write('/sys/fs/cgroup/cgroup.procs', '1');
    fs.write('/sys/fs/cgroup/cgroup.procs', '7');
    const detected = ExecutionCgroups.detect(v2View(fs, '/'));
    expect('cgroups' in detected && detected.cgroups.pids).toBe(`/sys/fs/cgroup/${EXECUTIONS_GROUP}`);
    expect(fs.layout()).toMatchObject({ '/': 'procs ; enables pids,memory', '/hub': 'procs 1,7; enables ' });
  });

  it('says why when the hub’s group offers no memory controller to its children (not delegated)', () => {
    const detected = ExecutionCgroups.detect(v2View(serviceHost(false), '/system.slice/hub.service'));
    expect(detected).toEqual({
      problem:
        'its own control group (/sys/fs/cgroup/system.slice/hub.service) offers no memory controller to its children: give the hub a delegated group (systemd: Delegate=yes)',
    });
  });

  it('reads the lowest memory limit of the hub’s group and those above it', () => {
    const fs = serviceHost();
    fs.write('/sys/fs/cgroup/system.slice/memory.max', String(8 * 1024 ** 3));
    fs.write('/sys/fs/cgroup/system.slice/hub.service/memory.max', 'max\n');
    expect(ExecutionCgroups.ownMemoryLimitMiB(v2View(fs, '/system.slice/hub.service'))).toBe(8192);
    fs.write('/sys/fs/cgroup/system.slice/memory.max', 'max\n');
    expect(ExecutionCgroups.ownMemoryLimitMiB(v2View(fs, '/system.slice/hub.service'))).toBeUndefined();
  });
});

/** cgroup v1 as a plain tree of files: the hub only makes directories in it and reads and writes files. */
class CgroupV1 implements CgroupFs {
  readonly files = new Map<string, string>();
  readonly dirs = new Set<string>();
  read(path: string): string {
    const file = this.files.get(path);
    if (file === undefined) throw failure('ENOENT', path);
    return file;
  }
  write(path: string, text: string): void {
    if (!this.dirs.has(dirname(path))) throw failure('ENOENT', path);
    this.files.set(path, text);
  }
  mkdir(path: string): void {
    this.dirs.add(path);
    this.files.set(`${path}/cgroup.procs`, '');
  }
  rmdir(path: string): Promise<void> {
    this.dirs.delete(path);
    return Promise.resolve();
  }
  exists(path: string): boolean {
    return this.dirs.has(path) || this.files.has(path);
  }
}

/** This machine's layout: v1 hierarchies, the unified one with no controllers, the hub's memory group not the root. */
const HYBRID_MOUNTINFO = [
  '31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
  '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
  '38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
  '40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
].join('\n');
const HYBRID_CGROUP = '8:pids:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n';

describe('the control groups of executions on cgroup v1', () => {
  it('are made below the hub’s own group of each hierarchy', async () => {
    const fs = new CgroupV1();
    for (const dir of ['/sys/fs/cgroup/pids', '/sys/fs/cgroup/memory', '/sys/fs/cgroup/memory/process_api/abc', '/sys/fs/cgroup/unified']) fs.mkdir(dir);
    fs.files.set('/sys/fs/cgroup/unified/cgroup.controllers', '\n');
    const detected = ExecutionCgroups.detect({ fs, procSelfCgroup: HYBRID_CGROUP, mountinfo: HYBRID_MOUNTINFO });
    if (!('cgroups' in detected)) throw new Error(detected.problem);
    expect([detected.cgroups.pids, detected.cgroups.memory]).toEqual([
      `/sys/fs/cgroup/pids/${EXECUTIONS_GROUP}`,
      `/sys/fs/cgroup/memory/process_api/abc/${EXECUTIONS_GROUP}`,
    ]);
    expect(await detected.cgroups.create('e1', { maxProcesses: 4096, maxMemoryMiB: 100 })).toEqual([
      // Joined through `tasks`: a shell moving itself, which skips the kernel's lock on every thread group.
      `/sys/fs/cgroup/pids/${EXECUTIONS_GROUP}/e1/tasks`,
      `/sys/fs/cgroup/memory/process_api/abc/${EXECUTIONS_GROUP}/e1/tasks`,
    ]);
    expect(fs.files.get(`/sys/fs/cgroup/memory/process_api/abc/${EXECUTIONS_GROUP}/e1/memory.limit_in_bytes`)).toBe(String(100 * 1024 * 1024));
    fs.files.set(`/sys/fs/cgroup/pids/${EXECUTIONS_GROUP}/e1/pids.events`, 'max 3\n');
    expect(detected.cgroups.exceeded('e1', { maxProcesses: 4096, maxMemoryMiB: 100 })).toBe('maxProcesses');
  });

  it('reads the memory limit the kernel keeps for the hub’s group (its own or one above)', () => {
    const fs = new CgroupV1();
    fs.mkdir('/sys/fs/cgroup/memory/process_api/abc');
    fs.files.set('/sys/fs/cgroup/memory/process_api/abc/memory.stat', `cache 0\nhierarchical_memory_limit ${6 * 1024 ** 3}\n`);
    expect(ExecutionCgroups.ownMemoryLimitMiB({ fs, procSelfCgroup: HYBRID_CGROUP, mountinfo: HYBRID_MOUNTINFO })).toBe(6144);
    fs.files.set('/sys/fs/cgroup/memory/process_api/abc/memory.stat', 'hierarchical_memory_limit 9223372036854771712\n');
    expect(ExecutionCgroups.ownMemoryLimitMiB({ fs, procSelfCgroup: HYBRID_CGROUP, mountinfo: HYBRID_MOUNTINFO })).toBeUndefined();
  });

  it('says why when no hierarchy shows the hub’s group (a container that mounts only its own part)', () => {
    const fs = new CgroupV1();
    const mountinfo =
      '38 30 0:35 /docker/other /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory';
    expect(ExecutionCgroups.detect({ fs, procSelfCgroup: '8:pids:/docker/abc\n4:memory:/docker/abc\n', mountinfo })).toEqual({
      problem: "no pids hierarchy shows the hub's own group",
    });
  });
});

describe('the parsing of /proc/self/cgroup and mountinfo', () => {
  it('reads the hub’s group in each hierarchy, co-mounted controllers included', () => {
    expect(ownGroups('12:cpu,cpuacct:/a\n4:memory:/process_api/x\n0::/user.slice/hub.service\n')).toEqual(
      new Map([
        ['cpu', '/a'],
        ['cpuacct', '/a'],
        ['memory', '/process_api/x'],
        ['', '/user.slice/hub.service'],
      ]),
    );
  });

  it('reads the cgroup mounts, with the part of the hierarchy each shows', () => {
    expect(cgroupMounts(`${HYBRID_MOUNTINFO}\n30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755`)).toEqual([
      { version: 1, controllers: ['rw', 'cpu'], root: '/', mountPoint: '/sys/fs/cgroup/cpu' },
      { version: 1, controllers: ['rw', 'memory'], root: '/', mountPoint: '/sys/fs/cgroup/memory' },
      { version: 1, controllers: ['rw', 'pids'], root: '/', mountPoint: '/sys/fs/cgroup/pids' },
      { version: 2, controllers: [], root: '/', mountPoint: '/sys/fs/cgroup/unified' },
    ]);
  });
});
