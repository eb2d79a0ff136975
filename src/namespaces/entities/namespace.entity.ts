import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn, VersionColumn } from 'typeorm';

/**
 * A named space most other entities live in. Names are unique ignoring case; at most one
 * namespace is the default (a partial unique index); a trigram index serves CO/SW filters.
 */
@Entity({ name: 'namespaces' })
@Index('namespaces_name_lower_key', { synchronize: false })
@Index('namespaces_name_trgm_idx', { synchronize: false })
@Index('namespaces_one_default_key', { synchronize: false })
@Index('namespaces_created_idx', ['created', 'id'])
@Index('namespaces_modified_idx', ['modified', 'id'])
export class Namespace {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @Column({ name: 'is_default', type: 'boolean', default: false })
  isDefault!: boolean;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}
