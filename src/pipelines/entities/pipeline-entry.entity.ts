import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn, VersionColumn } from 'typeorm';
import type { PipelineEntryType } from '../dto/pipeline-entry.dto.js';
import type { PipelineSpecShape } from '../pipeline-validation.js';

/**
 * A pipeline or a folder of them (one table: a folder is an entry that holds entries). `folderPath`
 * is kept on each row, so that listing a folder's path is an index lookup; a rename or move of a
 * folder rewrites the paths below it in its transaction. Names are unique, ignoring case, per
 * namespace and folder (the top level being the folder of the nil id in the unique index).
 */
@Entity({ name: 'pipeline_entries' })
@Index('pipeline_entries_name_key', { synchronize: false })
@Index('pipeline_entries_name_lower_idx', { synchronize: false })
@Index('pipeline_entries_name_trgm_idx', { synchronize: false })
@Index('pipeline_entries_folder_name_idx', { synchronize: false })
@Index('pipeline_entries_folder_path_name_idx', { synchronize: false })
@Index('pipeline_entries_namespace_name_idx', { synchronize: false })
@Index('pipeline_entries_namespace_created_idx', ['namespaceId', 'created', 'id'])
@Index('pipeline_entries_created_idx', ['created', 'id'])
@Index('pipeline_entries_modified_idx', ['modified', 'id'])
export class PipelineEntry {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'namespace_id', type: 'uuid' })
  namespaceId!: string;

  @Column({ type: 'text' })
  type!: PipelineEntryType;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'folder_id', type: 'uuid', nullable: true })
  folderId!: string | null;

  @Column({ name: 'folder_path', type: 'text' })
  folderPath!: string;

  @Column({ type: 'jsonb', nullable: true })
  spec!: PipelineSpecShape | null;

  @VersionColumn()
  version!: number;

  @CreateDateColumn({ type: 'timestamptz', precision: 3 })
  created!: Date;

  @UpdateDateColumn({ type: 'timestamptz', precision: 3 })
  modified!: Date;
}
