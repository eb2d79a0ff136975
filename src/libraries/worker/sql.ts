// SQL text helpers of the library worker: the only places a name or a path becomes SQL text. Names
// come from the dataset's own field list or the worker's own directory listing, never from a request.
export { quoteIdentifier as identifier } from '../where-filter.js';

/** `text` as a SQL string literal. */
export function literal(text: string): string {
  if (text.includes('\0')) throw new Error('A NUL character cannot be a SQL literal');
  return `'${text.replaceAll("'", "''")}'`;
}
