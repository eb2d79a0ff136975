import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock/clock.js';
import { HubConfig } from '../common/config/hub-config.js';
import { LinkSessionsRepository } from './link-sessions.repository.js';

/**
 * Heartbeats written together (a group commit): a session's heartbeats that arrive while one of its
 * writes is under way wait for the next write, which takes them all, at the time it is made (never
 * before any of them arrived), so a session beaten a thousand times a second costs its database a
 * write per round trip rather than per heartbeat. Each heartbeat is answered once a write that took
 * it has committed, with that write's nextExpectedHeartbeat: what a reply says is what the reaper
 * (in any hub) and every later read see, as it would be with a write per heartbeat.
 */
@Injectable()
export class SessionHeartbeats {
  /** The write under way, by session and caller. */
  private readonly writing = new Map<string, Promise<string | undefined>>();
  /** The write that takes the heartbeats arriving now: the next one, which starts once the one under way has ended. */
  private readonly next = new Map<string, Promise<string | undefined>>();

  constructor(
    private readonly sessions: LinkSessionsRepository,
    private readonly clock: Clock,
    private readonly config: HubConfig,
  ) {}

  /** Takes a heartbeat of `ownerId`'s session `id`; its next expected heartbeat, or undefined when it is not theirs or has ended. */
  beat(id: string, ownerId: string): Promise<string | undefined> {
    const key = `${id}/${ownerId}`;
    const joined = this.next.get(key);
    if (joined) return joined;
    const before = this.writing.get(key);
    const write = (before ?? Promise.resolve(undefined))
      .catch(() => undefined)
      .then(() => {
        // From here on, heartbeats that arrive wait for the write after this one.
        if (this.next.get(key) === write) this.next.delete(key);
        this.writing.set(key, write);
        const now = this.clock.now();
        return this.sessions.heartbeat(id, ownerId, now, new Date(now.getTime() + this.config.sessionHeartbeatInterval * 1000));
      })
      .finally(() => {
        if (this.writing.get(key) === write) this.writing.delete(key);
      });
    this.next.set(key, write);
    return write;
  }
}
