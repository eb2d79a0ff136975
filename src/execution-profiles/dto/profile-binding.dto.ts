import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { IsBoolean, IsUUID } from 'class-validator';
import { ListOf } from '../../common/http/list-envelope.js';
import type { ProfileBinding } from '../entities/profile-binding.entity.js';
import { Nullable } from '../../common/validation/nullable.js';

/** The body of a create or a replace (and what a patch must produce). */
export class ProfileBindingInputDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'executionProfileId must be an execution profile id (a UUID)' })
  executionProfileId!: string;

  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'namespaceId must be a namespace id (a UUID)' })
  namespaceId!: string;

  @ApiPropertyOptional({
    format: 'uuid',
    description: "On create, the id to give the binding (one is generated when absent); on replace, the binding's own id or nothing",
  })
  @Nullable()
  @IsUUID('all', { message: 'id must be a UUID' })
  id?: string | null;

  @ApiPropertyOptional({ description: "Make this the namespace's default binding (the previous default stops being it); absent means false" })
  @Nullable()
  @IsBoolean()
  isDefault?: boolean | null;
}

/** hub-interface §2.8 "Profile binding". */
export class ProfileBindingDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ format: 'uuid' }) executionProfileId!: string;
  @ApiProperty({ format: 'uuid' }) namespaceId!: string;
  @ApiProperty() isDefault!: boolean;
}

/** The bindings list: `{totalCount, data, executionProfiles}`, the last naming the profiles of the page. */
export class ProfileBindingListDto extends ListOf(ProfileBindingDto) {
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, description: 'Execution profile id to name, for the profiles on this page' })
  executionProfiles!: Record<string, string>;
}

export function toProfileBindingResponse(binding: Pick<ProfileBinding, 'id' | 'executionProfileId' | 'namespaceId' | 'isDefault'>): ProfileBindingDto {
  return { id: binding.id, executionProfileId: binding.executionProfileId, namespaceId: binding.namespaceId, isDefault: binding.isDefault };
}
