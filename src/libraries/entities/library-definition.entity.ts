import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, UpdateDateColumn, VersionColumn } from 'typeorm';
import type { LibraryEngine } from '../dto/library-definition.dto.js';

/**
 * What a library reads (api-map §5), in a namespace (see the Libraries migration): names are
 * unique within a namespace; a published definition cannot be deleted (the published library's
 * foreign key RESTRICTs). The other tables of the area are read and written with the area's own SQL.
 */
@Entity({ name: 'library_definitions' })
@Index('library_definitions_name_key', ['namespaceId', 'name'], { unique: true })
@Index('library_definitions_name_idx', ['name', 'id'])
@Index('library_definitions_created_idx', ['created', 'id'])
@Index('library_definitions_modified_idx', ['modified', 'id'])
export class LibraryDefinition {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'namespace_id', type: 'uuid' })
  namespaceId!: string;

  // The namespaces area's entity, named rather than imported (areas do not import each other's entities).
  @ManyToOne('Namespace', { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'namespace_id', foreignKeyConstraintName: 'library_definitions_namespace_id_fkey' })
  namespace?: unknown;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  engine!: LibraryEngine;

  @Column({ type: 'text', nullable: true })
  path!: string | null;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  options!: Record<string, unknown>;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}
