import { Column, Entity, JoinColumn, OneToOne, PrimaryColumn } from 'typeorm';
import { User } from './user.entity.js';

/**
 * The pending invitation of a user: only a SHA-256 of its token is kept (the token is 256 random
 * bits, so a fast hash is enough), and the row is deleted when the invitation is accepted. Its
 * expiry is the user's `invitationExpiry`.
 */
@Entity({ name: 'user_invitations' })
export class UserInvitation {
  @PrimaryColumn({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @Column({ name: 'token_hash', type: 'bytea', unique: true })
  tokenHash!: Buffer;

  @OneToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;
}
