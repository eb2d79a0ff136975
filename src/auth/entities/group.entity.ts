import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn, VersionColumn } from 'typeorm';

/**
 * A named set of users and other groups. Names are unique ignoring case (an expression index);
 * membership is kept in {@link GroupUserMember} and {@link GroupGroupMember}.
 */
@Entity({ name: 'groups' })
@Index('groups_system_idx', { synchronize: false })
@Index('groups_created_idx', ['created', 'id'])
@Index('groups_modified_idx', ['modified', 'id'])
@Index('groups_name_lower_key', { synchronize: false })
@Index('groups_name_trgm_idx', { synchronize: false })
@Index('groups_external_id_key', { synchronize: false })
export class Group {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'external_id', type: 'text', nullable: true })
  externalId!: string | null;

  @Column({ type: 'boolean', default: false })
  system!: boolean;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}
