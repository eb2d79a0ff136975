import { BlockList, isIP } from 'node:net';
import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

/** One entry of HUB_TRUSTED_PROXIES: an address, or a network in CIDR notation. */
export interface AddressRange {
  readonly address: string;
  readonly prefix?: number;
}

/** Parses comma-separated addresses and CIDRs (IPv4 or IPv6); undefined when any entry is neither. */
export function parseAddressRanges(text: string): AddressRange[] | undefined {
  const ranges: AddressRange[] = [];
  for (const entry of text.split(',').map((part) => part.trim())) {
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    if (family === 0 || rest.length > 0) return undefined;
    if (prefix === undefined) {
      ranges.push({ address });
      continue;
    }
    const bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    if (!(bits <= (family === 4 ? 32 : 128))) return undefined;
    ranges.push({ address, prefix: bits });
  }
  return ranges;
}

/** The peers whose `X-Forwarded-For` the hub believes. */
export function trustedProxies(ranges: readonly AddressRange[]): BlockList {
  const list = new BlockList();
  for (const { address, prefix } of ranges) {
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, prefix, family);
  }
  return list;
}

function isTrusted(address: string, proxies: BlockList): boolean {
  const family = isIP(address);
  return family !== 0 && proxies.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

/** Where a request comes from, as the connection and its `X-Forwarded-For` header say. */
export interface RequestOrigin {
  readonly peer: string;
  readonly forwardedFor?: string;
}

/**
 * The client's address: the connection's peer, unless the peer is a trusted proxy, in which case
 * the `X-Forwarded-For` entries are walked from the last (the one that proxy added) back while
 * each hop is itself trusted. An entry a client wrote is never believed: only a trusted proxy's.
 */
export function clientAddress(origin: RequestOrigin, proxies: BlockList): string {
  let address = origin.peer;
  const hops = (origin.forwardedFor ?? '')
    .split(',')
    .map((hop) => hop.trim())
    .filter((hop) => hop !== '');
  while (isTrusted(address, proxies) && hops.length > 0) {
    const next = hops.pop() as string;
    if (isIP(next) === 0) break;
    address = next;
  }
  return address;
}

/** The request's origin, for a service that throttles by client address. */
export const Origin = createParamDecorator((_data: unknown, context: ExecutionContext): RequestOrigin =>
  originOf(context.switchToHttp().getRequest<FastifyRequest>()),
);

export function originOf(request: FastifyRequest): RequestOrigin {
  const header = request.headers['x-forwarded-for'];
  return { peer: request.socket.remoteAddress ?? '', forwardedFor: Array.isArray(header) ? header.join(',') : header };
}

/** The 8 groups of 16 bits of an IPv6 address (an embedded IPv4 tail included); undefined when it is not one. */
function ipv6Groups(address: string): number[] | undefined {
  const bare = address.split('%')[0];
  if (isIP(bare) !== 6) return undefined;
  const [head, tail] = bare.includes('::') ? bare.split('::') : [bare, undefined];
  const parse = (part: string) =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a, b, c, d] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const front = parse(head);
  const back = tail === undefined ? [] : parse(tail);
  return [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/**
 * The network an address stands for when the hub remembers where a user logs in from: an IPv4
 * address itself (an IPv4-mapped IPv6 one too), and for IPv6 its /64, the smallest network a
 * site is given (one host may use many addresses of it, privacy extensions among them).
 */
export function addressNetwork(address: string): string {
  const groups = ipv6Groups(address);
  if (!groups) return address;
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}
