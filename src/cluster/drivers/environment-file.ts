/**
 * An execution's environment as `NAME='value'` lines that a shell reads back exactly (`set -a;
 * . file`): the launch reads it as the job's user, so that none of it reaches a privileged step.
 */
export function environmentFile(env: Readonly<Record<string, string>>): string {
  return Object.entries(env)
    .map(([name, value]) => `${name}='${value.replace(/'/g, `'\\''`)}'\n`)
    .join('');
}
