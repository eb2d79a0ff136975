import { describe, expect, it } from '@jest/globals';
import { parseEndpointFile } from './service-endpoints.js';

/** What a Slurm launch writes in its execution directory is the job user's word: the hub takes only its own node's address. */
describe('parseEndpointFile', () => {
  const node = new Set(['10.1.2.3', 'fd00::3']);

  it.each([
    ['10.1.2.3:40123\n', { host: '10.1.2.3', port: 40123 }],
    ['10.1.2.3:1024', { host: '10.1.2.3', port: 1024 }],
    ['[fd00::3]:65535\n', { host: 'fd00::3', port: 65535 }],
  ])('takes %j', (text, endpoint) => {
    expect(parseEndpointFile(text, node)).toEqual(endpoint);
  });

  it.each([
    ['another machine', '10.9.9.9:40123\n'],
    ["the hub's loopback", '127.0.0.1:5432\n'],
    ['a privileged port', '10.1.2.3:22\n'],
    ['port 0', '10.1.2.3:0\n'],
    ['a port past 65535', '10.1.2.3:70000\n'],
    ['a host name', 'node1:40123\n'],
    ['an IPv6 address without brackets', 'fd00::3:40123\n'],
    ['two lines', '10.1.2.3:40123\n10.9.9.9:40123\n'],
    ['nothing', ''],
  ])('refuses %s', (_, text) => {
    expect(parseEndpointFile(text, node)).toBeUndefined();
  });
});
