import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Where a benchmark's CPU went, from /proc (Linux only): the machine's cores and how busy they were, the CPU time of
 * groups of process trees, and pinning processes to cores with util-linux's `taskset`. What a phase's calls cost
 * every process that served them, set against what the machine's cores can give, tells a bound of the machine from
 * a bound of the code.
 */

/** USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture. */
const TICKS_PER_SECOND = 100;

/** One core's time since boot, in ticks. */
export interface CoreTimes {
  readonly busy: number;
  readonly total: number;
}

/** Each core's busy and total time since boot (/proc/stat's `cpuN` lines). */
export function coreTimes(): CoreTimes[] {
  return readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .filter((line) => /^cpu\d+ /.test(line))
    .map((line) => {
      // user nice system idle iowait irq softirq steal; guest and guest_nice are counted in user and nice already.
      const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number) as [number, number, number, number, number, number, number, number];
      const total = user + nice + system + idle + iowait + irq + softirq + steal;
      // Waiting for the disk is idle time: the core could have run something else.
      return { busy: total - idle - iowait, total };
    });
}

/** How busy the machine's cores were between two readings of `coreTimes`. */
export interface CoreLoad {
  readonly cores: number;
  /** Busy share of all the cores together, %. */
  readonly busyPercent: number;
  readonly perCorePercent: number[];
  /** CPU seconds the cores spent busy: every process on the machine, this benchmark's and anyone else's. */
  readonly busySeconds: number;
}

export function coreLoad(before: readonly CoreTimes[], after: readonly CoreTimes[]): CoreLoad {
  const deltas = after.map((core, i) => ({ busy: core.busy - before[i]!.busy, total: core.total - before[i]!.total }));
  const busy = deltas.reduce((sum, core) => sum + core.busy, 0);
  const total = deltas.reduce((sum, core) => sum + core.total, 0);
  return {
    cores: deltas.length,
    busyPercent: (busy * 100) / total,
    perCorePercent: deltas.map((core) => (core.busy * 100) / core.total),
    busySeconds: busy / TICKS_PER_SECOND,
  };
}

interface ProcessTimes {
  readonly pid: number;
  readonly ppid: number;
  /** utime + stime, and cutime + cstime: the children it has reaped hand their time to it. */
  readonly ticks: number;
}

function processTimes(pid: number): ProcessTimes | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The name may hold spaces and parentheses: the fields are what follows its last ')'. After it, the 2nd is the
    // parent's pid and the 12th to 15th utime, stime, cutime and cstime.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]) };
  } catch {
    return undefined; // it ended between listing /proc and reading it
  }
}

/**
 * The CPU seconds each thread of a process has had so far, summed by the thread's name (`/proc/<pid>/task/<tid>/comm`):
 * Node names its calling thread `MainThread` and each worker thread `WorkerThread`; V8's helper threads (the
 * collector's parallel and concurrent work, compilation) are `V8Worker`, libuv's pool `libuv-worker`. A thread that
 * has ended is in no reading. Empty when the process is gone.
 */
export function threadCpuSeconds(pid: number): Record<string, number> {
  const byName: Record<string, number> = {};
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const tid of tasks) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // As in /proc/<pid>/stat: after the name's last ')', the 12th and 13th fields are utime and stime.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byName[name] = (byName[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
    } catch {
      // The thread ended between the listing and the reading.
    }
  }
  return byName;
}

/** Every process on the machine, by parent. */
function processTree(): Map<number, ProcessTimes[]> {
  const byParent = new Map<number, ProcessTimes[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const times = processTimes(Number(name));
    if (times === undefined) continue;
    byParent.set(times.ppid, [...(byParent.get(times.ppid) ?? []), times]);
  }
  return byParent;
}

function descendants(byParent: Map<number, ProcessTimes[]>, pid: number): ProcessTimes[] {
  const children = byParent.get(pid) ?? [];
  return children.flatMap((child) => [child, ...descendants(byParent, child.pid)]);
}

/**
 * The CPU seconds of each group of processes, every process with all those under it (PostgreSQL's backends are the
 * postmaster's children). A child that ended was reaped by its parent, which then counts its time: the difference of
 * two readings holds the backends that came and went between them.
 */
export function groupCpuSeconds<Group extends string>(groups: Readonly<Record<Group, readonly number[]>>): Record<Group, number> {
  const byParent = processTree();
  const result = {} as Record<Group, number>;
  for (const [group, roots] of Object.entries(groups) as Array<[Group, readonly number[]]>) {
    let ticks = 0;
    for (const root of roots) {
      const own = processTimes(root);
      if (own === undefined) continue;
      ticks += own.ticks + descendants(byParent, root).reduce((sum, child) => sum + child.ticks, 0);
    }
    result[group] = ticks / TICKS_PER_SECOND;
  }
  return result;
}

/** The cores a process may run on, as the kernel lists them (`0-1`, `0`). */
export function allowedCores(pid: number): string {
  try {
    return /Cpus_allowed_list:\s+(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '?';
  } catch {
    return '?';
  }
}

/** Whether util-linux's `taskset` runs here. */
export function tasksetAvailable(): boolean {
  try {
    execFileSync('taskset', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Pins each process, every thread of it and every process under it, to `cores` (`taskset --all-tasks`). What they
 * start afterwards inherits the pinning.
 */
export function pinToCores(pids: readonly number[], cores: readonly number[]): void {
  const byParent = processTree();
  const all = pids.flatMap((pid) => [pid, ...descendants(byParent, pid).map((child) => child.pid)]);
  for (const pid of all) {
    try {
      execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cores.join(','), String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (error) {
      // A process under one of them (a PostgreSQL backend) may end before it is reached; one still there is an error.
      if (processTimes(pid) !== undefined) throw error;
    }
  }
}
