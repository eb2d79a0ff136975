import { ApiProperty } from '../../common/http/openapi-decorators.js';
import type { AuditRecord } from '../entities/audit-record.entity.js';
import { EFFECTS } from './role.dto.js';

export const AUDIT_PURPOSES = ['Request', 'Filter'] as const;

/** hub-interface §2.7b "Audit record". */
export class AuditRecordDto {
  @ApiProperty({ example: '/Namespaces/1f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11' }) object!: string;
  @ApiProperty({ example: 'analytics', description: 'A namespace name, or *' }) namespace!: string;
  @ApiProperty({ example: 'Read' }) action!: string;
  @ApiProperty({ format: 'uuid' }) userId!: string;
  @ApiProperty({ type: [String], description: "Ids of the user's groups, direct and indirect" }) groups!: string[];
  @ApiProperty({ enum: EFFECTS }) decision!: string;
  @ApiProperty({ enum: AUDIT_PURPOSES }) purpose!: string;
  @ApiProperty({ format: 'date-time' }) when!: string;
}

export function toAuditRecordResponse(record: AuditRecord): AuditRecordDto {
  return {
    object: record.object,
    namespace: record.namespace,
    action: record.action,
    userId: record.userId,
    groups: record.groups,
    decision: record.decision,
    purpose: record.purpose,
    when: record.when.toISOString(),
  };
}
