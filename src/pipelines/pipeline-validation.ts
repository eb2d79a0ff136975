/**
 * The rules a pipeline's spec must follow to run (api-map §7 "Pipeline semantics"), checked all at
 * once: a pure function over the spec's JSON, so that validate, submit and create-run share it.
 * A stored pipeline may break them (a draft); only running it is refused.
 */

/** The connection kinds of a node, in the order messages name them. */
export const CONNECTION_KINDS = ['onSuccess', 'onError', 'onTrue', 'onFalse', 'onAny'] as const;
export type ConnectionKind = (typeof CONNECTION_KINDS)[number];

/** What the rules read of a spec: the shape of hub-interface §2.4b, every part optional (a draft). */
export interface PipelineSpecShape {
  readonly nodes?: readonly PipelineNodeShape[];
  readonly keepGoing?: boolean;
  readonly meta?: Readonly<Record<string, unknown>>;
}

export interface PipelineNodeShape {
  readonly name?: string;
  readonly connections?: Partial<Readonly<Record<ConnectionKind, readonly string[]>>>;
  readonly inputs?: { readonly resources?: Readonly<Record<string, { readonly type?: string; readonly repo?: string }>> };
  readonly task?: { readonly command?: string; readonly conditionNode?: boolean };
}

/** How a message names a node: by its name, or by its place when it has none. */
function label(node: PipelineNodeShape, index: number): string {
  return node.name ? `Node '${node.name}'` : `spec.nodes[${index}]`;
}

const quoted = (names: readonly string[]) => names.map((name) => `'${name}'`).join(', ');

/** The nodes each node connects to, by index (a duplicate name: its first node), and every unknown target. */
function edgesOf(nodes: readonly PipelineNodeShape[], byName: ReadonlyMap<string, number>): number[][] {
  return nodes.map((node) => {
    const targets = CONNECTION_KINDS.flatMap((kind) => node.connections?.[kind] ?? []);
    return [...new Set(targets.map((target) => byName.get(target)).filter((target) => target !== undefined))];
  });
}

/**
 * The node sets that form cycles (strongly connected components of more than one node, or a node
 * connected to itself), each in spec order; Tarjan's algorithm, without recursion so that a long
 * chain cannot overflow the stack.
 */
export function cyclesOf(edges: readonly (readonly number[])[]): number[][] {
  const index = new Array<number>(edges.length).fill(-1);
  const low = new Array<number>(edges.length).fill(0);
  const onStack = new Array<boolean>(edges.length).fill(false);
  const stack: number[] = [];
  const cycles: number[][] = [];
  let counter = 0;
  for (let root = 0; root < edges.length; root += 1) {
    if (index[root] !== -1) continue;
    // Each frame: a node and the position of the next edge to follow.
    const frames: [number, number][] = [[root, 0]];
    index[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = true;
    while (frames.length > 0) {
      const frame = frames[frames.length - 1];
      const [node, next] = frame;
      if (next < edges[node].length) {
        frame[1] += 1;
        const target = edges[node][next];
        if (index[target] === -1) {
          index[target] = low[target] = counter++;
          stack.push(target);
          onStack[target] = true;
          frames.push([target, 0]);
        } else if (onStack[target]) {
          low[node] = Math.min(low[node], index[target]);
        }
        continue;
      }
      frames.pop();
      if (frames.length > 0) {
        const parent = frames[frames.length - 1][0];
        low[parent] = Math.min(low[parent], low[node]);
      }
      if (low[node] !== index[node]) continue;
      const component: number[] = [];
      let member: number;
      do {
        member = stack.pop() as number;
        onStack[member] = false;
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || edges[node].includes(node)) cycles.push(component.sort((a, b) => a - b));
    }
  }
  return cycles.sort((a, b) => a[0] - b[0]);
}

/** The problems of one node that concern it alone, each naming it. */
function nodeProblems(node: PipelineNodeShape, index: number, byName: ReadonlyMap<string, number>): string[] {
  const problems: string[] = [];
  const who = label(node, index);
  if (!node.name) problems.push(`${who}: the node has no name`);
  for (const kind of CONNECTION_KINDS) {
    const targets = node.connections?.[kind] ?? [];
    const unknown = [...new Set(targets.filter((target) => !byName.has(target)))];
    if (unknown.length > 0)
      problems.push(`${who}: ${kind} names ${quoted(unknown)}, which ${unknown.length > 1 ? 'are no nodes' : 'is no node'} of the pipeline`);
  }
  if (node.task?.conditionNode !== true) {
    const misplaced = (['onTrue', 'onFalse'] as const).filter((kind) => (node.connections?.[kind]?.length ?? 0) > 0);
    if (misplaced.length > 0)
      problems.push(`${who}: ${misplaced.join(' and ')} ${misplaced.length > 1 ? 'are' : 'is'} only for a node whose task is a conditionNode`);
  }
  if (!node.task?.command?.trim()) problems.push(`${who}: the task's command is empty`);
  for (const [key, resource] of Object.entries(node.inputs?.resources ?? {})) {
    if (!resource.repo?.trim()) problems.push(`${who}: the git input '${key}' has no repo`);
  }
  return problems;
}

/**
 * Every way a spec breaks the rules, as messages that each name the node(s) concerned (a node
 * without a name by its place, `spec.nodes[i]`); empty when the pipeline may run.
 */
export function validatePipelineSpec(spec: PipelineSpecShape | undefined): string[] {
  const nodes = spec?.nodes ?? [];
  if (nodes.length === 0) return ['spec.nodes: a pipeline needs at least one node'];
  const byName = new Map<string, number>();
  const duplicates = new Map<string, number[]>();
  nodes.forEach((node, index) => {
    if (!node.name) return;
    const first = byName.get(node.name);
    if (first === undefined) byName.set(node.name, index);
    else duplicates.set(node.name, [...(duplicates.get(node.name) ?? [first]), index]);
  });
  const problems = nodes.flatMap((node, index) => nodeProblems(node, index, byName));
  for (const [name, indexes] of duplicates)
    problems.push(`Node '${name}': the name is used by ${indexes.length} nodes (${indexes.map((index) => `spec.nodes[${index}]`).join(', ')})`);
  for (const cycle of cyclesOf(edgesOf(nodes, byName))) {
    const names = cycle.map((index) => nodes[index].name as string);
    problems.push(
      cycle.length === 1 ? `Node '${names[0]}': it connects to itself, a cycle` : `Nodes ${quoted(names)}: they form a cycle, so none of them could ever run`,
    );
  }
  return problems;
}
