/**
 * What a run does next, decided from its spec and its nodes' states alone (api-map §7 "Pipeline
 * semantics" and "Settled details"): a pure function, so that the engine's rules can be read and
 * tested apart from the database and the cluster.
 */
import type { NodeState } from './dto/pipeline-run.dto.js';
import { CONNECTION_KINDS, type ConnectionKind, type PipelineNodeShape } from './pipeline-validation.js';

/** How a finished node ended, as its connections read it. */
export type Outcome = 'success' | 'error' | 'true' | 'false' | 'skipped' | 'cancelled';

/** The connections an outcome follows (with `onAny` for every outcome of a node that ran). */
const FOLLOWS: Readonly<Record<Outcome, readonly ConnectionKind[]>> = {
  success: ['onSuccess', 'onAny'],
  error: ['onError', 'onAny'],
  true: ['onTrue', 'onAny'],
  false: ['onFalse', 'onAny'],
  skipped: [],
  cancelled: [],
};

export const FINISHED: ReadonlySet<NodeState> = new Set(['Succeeded', 'Failed', 'Skipped', 'Cancelled']);

/** What the graph needs of a node's row. */
export interface GraphNode {
  readonly name: string;
  readonly state: NodeState;
  readonly outcome: Outcome | null;
  /** 0 until its first attempt was asked of the cluster. */
  readonly attempt: number;
}

export interface GraphDecision {
  /** Nodes to submit now, in spec order. */
  readonly submit: string[];
  /** Nodes that can no longer run, with why. */
  readonly skip: { readonly name: string; readonly why: string }[];
  /** Set when every node has finished (after the skips above): how the run ends. */
  readonly ends?: 'Succeeded' | 'Failed';
}

/** Whether a failed node's failure is handled by a connection (onError or onAny). */
function handled(node: PipelineNodeShape): boolean {
  return (node.connections?.onError?.length ?? 0) > 0 || (node.connections?.onAny?.length ?? 0) > 0;
}

/** The nodes reachable from `start` by any connection, `start` included. */
function reachableFrom(start: string, targets: ReadonlyMap<string, readonly string[]>): Set<string> {
  const seen = new Set([start]);
  const queue = [start];
  while (queue.length > 0) {
    for (const next of targets.get(queue.pop() as string) ?? []) {
      if (seen.has(next)) continue;
      seen.add(next);
      queue.push(next);
    }
  }
  return seen;
}

/** The run's graph: each node's spec, its targets by any connection, and its predecessors. */
export class RunGraph {
  readonly specs = new Map<string, PipelineNodeShape>();
  private readonly targets = new Map<string, string[]>();
  private readonly predecessors = new Map<string, string[]>();
  private readonly reachable?: Set<string>;
  /** heldAfter's answers, by `most` and name: the graph never changes, and an engine asks on every pass. */
  private readonly held = new Map<number, Map<string, string[]>>();

  constructor(
    nodes: readonly PipelineNodeShape[],
    private readonly keepGoing: boolean,
    private readonly entryPoint?: string,
  ) {
    for (const node of nodes) {
      const name = node.name as string;
      this.specs.set(name, node);
      this.predecessors.set(name, this.predecessors.get(name) ?? []);
      const targets = [...new Set(CONNECTION_KINDS.flatMap((kind) => node.connections?.[kind] ?? []))];
      this.targets.set(name, targets);
      for (const target of targets) this.predecessors.set(target, [...(this.predecessors.get(target) ?? []), name]);
    }
    if (entryPoint !== undefined) this.reachable = reachableFrom(entryPoint, this.targets);
  }

  /** The nodes a node's outcome makes ready. */
  readiedBy(name: string, outcome: Outcome): string[] {
    const connections = this.specs.get(name)?.connections;
    return [...new Set(FOLLOWS[outcome].flatMap((kind) => connections?.[kind] ?? []))];
  }

  /**
   * The nodes that run exactly when `name` succeeds, whatever else happens (at most `most` of them,
   * else none): each one it leads to on success alone, that no other node leads to and that is
   * not the entry point, in a run where it is reachable. What an engine may submit ahead, held on
   * `name`'s success (PipelineEngine.holdAhead): its failure skips them all, as `decide` would.
   */
  heldAfter(name: string, most: number): readonly string[] {
    return this.heldBy(most).get(name) ?? [];
  }

  /** Whether any node has nodes held after it (see heldAfter): in most fan-outs and joins, none. */
  holdsAny(most: number): boolean {
    return this.heldBy(most).size > 0;
  }

  /** Every node's heldAfter with `most`, those with none left out. */
  private heldBy(most: number): Map<string, string[]> {
    let answers = this.held.get(most);
    if (answers) return answers;
    answers = new Map();
    for (const name of this.specs.keys()) {
      const held = this.computeHeldAfter(name, most);
      if (held.length > 0) answers.set(name, held);
    }
    this.held.set(most, answers);
    return answers;
  }

  private computeHeldAfter(name: string, most: number): string[] {
    const connections = this.specs.get(name)?.connections;
    const onSuccess = connections?.onSuccess ?? [];
    const others = new Set(CONNECTION_KINDS.filter((kind) => kind !== 'onSuccess').flatMap((kind) => connections?.[kind] ?? []));
    const targets = this.targets.get(name) ?? [];
    if (targets.length > most) return [];
    return targets.filter(
      (target) =>
        onSuccess.includes(target) &&
        !others.has(target) &&
        target !== this.entryPoint &&
        (!this.reachable || this.reachable.has(target)) &&
        (this.predecessors.get(target) ?? []).length === 1,
    );
  }

  /** The nodes that lead to `name` by any connection. */
  predecessorsOf(name: string): readonly string[] {
    return this.predecessors.get(name) ?? [];
  }

  /** Whether a node failed without a connection that handles it: the run then fails. */
  failsRun(node: GraphNode): boolean {
    return node.state === 'Failed' && !handled(this.specs.get(node.name) ?? {});
  }

  /**
   * The next step: nodes whose predecessors have all finished run when one of them made them
   * ready, and are skipped otherwise; without `entryPoint`, nodes without predecessors start the
   * run; with it, only that node does and the nodes it cannot reach are skipped. After a failure
   * nothing handles, nothing new starts unless the spec says `keepGoing` (running nodes finish).
   */
  decide(nodes: ReadonlyMap<string, GraphNode>): GraphDecision {
    const failed = [...nodes.values()].find((node) => this.failsRun(node));
    const submit = new Set<string>();
    const skip = new Map<string, string>();
    const finished = (name: string) => {
      const node = nodes.get(name);
      return node !== undefined && (FINISHED.has(node.state) || skip.has(name));
    };
    // Spec order is a topological order only by chance: repeat until no node changes, so a skip reaches the nodes after it.
    for (let changed = true; changed;) {
      changed = false;
      for (const [name, node] of nodes) {
        if (node.attempt > 0 || FINISHED.has(node.state) || submit.has(name) || skip.has(name)) continue;
        if (this.reachable && !this.reachable.has(name)) {
          skip.set(name, 'The run started at its entryPoint, from which this node cannot be reached');
          changed = true;
          continue;
        }
        if (failed && !this.keepGoing) {
          skip.set(name, `Node '${failed.name}' failed and nothing handles it, so the run stops (keepGoing is off)`);
          changed = true;
          continue;
        }
        const predecessors = (this.predecessors.get(name) ?? []).filter((predecessor) => !this.reachable || this.reachable.has(predecessor));
        const isEntry = this.entryPoint !== undefined ? name === this.entryPoint : predecessors.length === 0;
        if (isEntry) {
          submit.add(name);
          changed = true;
          continue;
        }
        if (!predecessors.every(finished)) continue;
        const readied = predecessors.some((predecessor) => {
          const before = nodes.get(predecessor);
          return before?.outcome !== null && before?.outcome !== undefined && this.readiedBy(predecessor, before.outcome).includes(name);
        });
        if (readied) submit.add(name);
        else skip.set(name, 'None of its predecessors led here');
        changed = true;
      }
    }
    const allDone = [...nodes.keys()].every((name) => finished(name) && !submit.has(name));
    return {
      submit: [...submit],
      skip: [...skip].map(([name, why]) => ({ name, why })),
      ...(allDone && { ends: failed ? 'Failed' : 'Succeeded' }),
    };
  }
}
