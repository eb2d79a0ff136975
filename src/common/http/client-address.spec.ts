import { describe, expect, it } from '@jest/globals';
import { addressNetwork, clientAddress, parseAddressRanges, trustedProxies } from './client-address.js';

describe('clientAddress', () => {
  const proxies = trustedProxies(parseAddressRanges('10.0.0.1,192.168.0.0/16,::1') ?? []);

  it.each<[string, string | undefined, string]>([
    ['203.0.113.7', undefined, '203.0.113.7'],
    // A client's own X-Forwarded-For is never believed.
    ['203.0.113.7', '198.51.100.1', '203.0.113.7'],
    ['10.0.0.1', '198.51.100.1', '198.51.100.1'],
    ['::1', '198.51.100.1', '198.51.100.1'],
    // Walked back from the trusted proxy's entry while each hop is trusted; a forged first entry stays unread.
    ['10.0.0.1', '6.6.6.6, 198.51.100.1, 192.168.3.4', '198.51.100.1'],
    ['10.0.0.1', '6.6.6.6, 192.168.3.4', '6.6.6.6'],
    ['10.0.0.2', '198.51.100.1', '10.0.0.2'],
    ['10.0.0.1', 'not-an-address', '10.0.0.1'],
    ['10.0.0.1', '', '10.0.0.1'],
  ])('peer %s with X-Forwarded-For %j is %s', (peer, forwardedFor, expected) => {
    expect(clientAddress({ peer, forwardedFor }, proxies)).toBe(expected);
  });

  it('believes no X-Forwarded-For without trusted proxies', () => {
    expect(clientAddress({ peer: '10.0.0.1', forwardedFor: '198.51.100.1' }, trustedProxies([]))).toBe('10.0.0.1');
  });

  it.each(['', 'proxy.example', '10.0.0.0/33', '::/129', '10.0.0.1/8/1', '10.0.0.1,,10.0.0.2', '10.0.0.0/x'])('refuses the list %j', (text) => {
    expect(parseAddressRanges(text)).toBeUndefined();
  });
});

describe('addressNetwork', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:aaaa::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['', ''],
  ])('takes %s as %s', (address, network) => {
    expect(addressNetwork(address)).toBe(network);
  });
});
