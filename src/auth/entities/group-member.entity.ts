import { Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Group } from './group.entity.js';
import { User } from './user.entity.js';

/** A user directly in a group. Deleting either removes the membership. */
@Entity({ name: 'group_user_members' })
@Index('group_user_members_user_id_idx', ['userId'])
export class GroupUserMember {
  @PrimaryColumn({ name: 'group_id', type: 'uuid' })
  groupId!: string;

  @PrimaryColumn({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @ManyToOne(() => Group, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'group_id' })
  group?: Group;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;
}

/**
 * A group directly in another group; the graph of these stays acyclic (checked under a lock
 * when members are added). Deleting either group removes the membership.
 */
@Entity({ name: 'group_group_members' })
@Index('group_group_members_member_group_id_idx', ['memberGroupId'])
export class GroupGroupMember {
  @PrimaryColumn({ name: 'group_id', type: 'uuid' })
  groupId!: string;

  @PrimaryColumn({ name: 'member_group_id', type: 'uuid' })
  memberGroupId!: string;

  @ManyToOne(() => Group, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'group_id' })
  group?: Group;

  @ManyToOne(() => Group, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'member_group_id' })
  memberGroup?: Group;
}
