import { ApiProperty, ApiPropertyOptional } from '../../common/http/openapi-decorators.js';
import { ArrayMaxSize, IsArray, IsOptional, IsString, IsUUID, MaxLength, MinLength } from 'class-validator';
import { EFFECTS } from './role.dto.js';

/** One question of `POST /rbac/evaluate`. */
export class EvaluateItemDto {
  @ApiProperty({ example: '/Namespaces' })
  @IsString()
  @MinLength(1)
  @MaxLength(1024)
  object!: string;

  @ApiProperty({ example: 'Read' })
  @IsString()
  @MinLength(1)
  @MaxLength(64)
  action!: string;

  @ApiPropertyOptional({ example: 'analytics', description: 'A namespace name; absent or * for every namespace' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  namespace?: string;
}

/** One question of `POST /rbac/explain`: about any user, as a member of `groups` if given. */
export class ExplainItemDto extends EvaluateItemDto {
  @ApiProperty({ format: 'uuid', description: 'The user id' })
  @IsUUID('all', { message: 'user must be a user id (a UUID)' })
  user!: string;

  @ApiPropertyOptional({ type: [String], description: "Group ids to explain for instead of the user's own groups (direct and indirect)" })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(1000)
  @IsUUID('all', { each: true, message: 'each group must be a group id (a UUID)' })
  groups?: string[];
}

export class ExplanationDto {
  @ApiProperty({ description: 'Whether the permission matches the object and action' }) matches!: boolean;
  @ApiProperty({
    example: "role 'NamespaceUser' (…) permission 1 (simple /Namespaces: Read) through binding … of group 'analysts' in namespace 'analytics'",
  })
  source!: string;
  @ApiProperty({ enum: EFFECTS }) effect!: string;
}

/** hub-interface §2.7b "Explain result item". */
export class ExplainResultDto {
  @ApiProperty({ enum: EFFECTS, description: 'The decision' }) effect!: string;
  @ApiProperty({ type: [ExplanationDto], description: 'Every permission of the bindings that apply in the namespace' })
  explanation!: ExplanationDto[];
}
