import { re2js } from '../common/on-first-use.js';

/** The operators of a node constraint (api-map §4). */
export const CONSTRAINT_OPERATORS = ['=', '!=', 'in', 'not_in', 'contains', 'regexp'] as const;
export type ConstraintOperator = (typeof CONSTRAINT_OPERATORS)[number];

/** `node.label`, `node.os`, `node.name` or `node.attr.<key>` (api-map §4). */
export const CONSTRAINT_ATTRIBUTE = /^node\.(?:label|os|name|attr\.[A-Za-z0-9_.-]{1,64})$/;
export const CONSTRAINT_ATTRIBUTE_RULE = 'attribute must be node.label, node.os, node.name or node.attr.<key> (key: 1-64 letters, digits, "_", "." or "-")';

export interface NodeConstraint {
  readonly attribute: string;
  readonly operator: ConstraintOperator;
  readonly value: string;
}

/** What a constraint is matched against: one node as its driver describes it. */
export interface NodeFacts {
  readonly name: string;
  readonly os: string;
  readonly labels: readonly string[];
  readonly attributes: Readonly<Record<string, string>>;
}

/** The items of an `in` or `not_in` value: comma-separated, blanks around them ignored. */
function listOf(value: string): string[] {
  return value.split(',').map((item) => item.trim());
}

/** Why a constraint's value does not fit its operator; undefined when it does. */
export function constraintValueProblem(constraint: NodeConstraint): string | undefined {
  if (constraint.operator === 'in' || constraint.operator === 'not_in') {
    return listOf(constraint.value).some((item) => item === '')
      ? `value of ${constraint.operator} must be a comma-separated list of non-empty values`
      : undefined;
  }
  if (constraint.operator === 'regexp') {
    try {
      re2js().RE2JS.compile(constraint.value);
    } catch (error) {
      return `value is not a valid regular expression: ${(error as Error).message}`;
    }
  }
  return undefined;
}

/** The values a node has for an attribute: its labels, or its one OS, name or attribute (none when unset). */
function valuesOf(node: NodeFacts, attribute: string): readonly string[] {
  if (attribute === 'node.label') return node.labels;
  if (attribute === 'node.os') return [node.os];
  if (attribute === 'node.name') return [node.name];
  const key = attribute.slice('node.attr.'.length);
  return Object.hasOwn(node.attributes, key) ? [node.attributes[key]] : [];
}

/**
 * Whether a node meets a constraint. For a label (a node has several), `=`, `in`, `contains` and
 * `regexp` need one label that matches, `!=` and `not_in` need none; a `regexp` matches a whole
 * value (it is anchored). Comparisons are exact (case matters).
 */
export function meets(node: NodeFacts, constraint: NodeConstraint): boolean {
  const values = valuesOf(node, constraint.attribute);
  switch (constraint.operator) {
    case '=':
      return values.includes(constraint.value);
    case '!=':
      return !values.includes(constraint.value);
    case 'in': {
      const wanted = listOf(constraint.value);
      return values.some((value) => wanted.includes(value));
    }
    case 'not_in': {
      const unwanted = listOf(constraint.value);
      return !values.some((value) => unwanted.includes(value));
    }
    case 'contains':
      return values.some((value) => value.includes(constraint.value));
    case 'regexp': {
      const pattern = re2js().RE2JS.compile(`^(?:${constraint.value})$`);
      return values.some((value) => pattern.matches(value));
    }
  }
}

/** The first constraint a node does not meet (a workload runs only where it meets all), or undefined. */
export function unmetConstraint(node: NodeFacts, constraints: readonly NodeConstraint[]): NodeConstraint | undefined {
  return constraints.find((constraint) => !meets(node, constraint));
}

/** A constraint in words, for events and messages: `node.label in gpu,fast`. */
export function describeConstraint(constraint: NodeConstraint): string {
  return `${constraint.attribute} ${constraint.operator} ${constraint.value}`;
}
