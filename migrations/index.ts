import type { MigrationInterface } from 'typeorm';
import { Init1795327638783 } from './1795327638783-Init.js';
import { ChangeNotifications1795330000000 } from './1795330000000-ChangeNotifications.js';
import { Identity1795333874460 } from './1795333874460-Identity.js';
import { AccessControl1795335943039 } from './1795335943039-AccessControl.js';
import { AuthDomains1795340754133 } from './1795340754133-AuthDomains.js';
import { ExecutionProfiles1795341123748 } from './1795341123748-ExecutionProfiles.js';
import { Cluster1795342955296 } from './1795342955296-Cluster.js';
import { JobUids1795350000000 } from './1795350000000-JobUids.js';
import { AccessModelGuards1795351000000 } from './1795351000000-AccessModelGuards.js';
import { ClusterJobPath1795354000000 } from './1795354000000-ClusterJobPath.js';
import { ListsAtScale1795355000000 } from './1795355000000-ListsAtScale.js';
import { ExecutionCountsByNode1795356000000 } from './1795356000000-ExecutionCountsByNode.js';
import { SubmissionCaches1795358000000 } from './1795358000000-SubmissionCaches.js';
import { PreparedLaunches1795360000000 } from './1795360000000-PreparedLaunches.js';
import { FamiliarLoginAddresses1795400000000 } from './1795400000000-FamiliarLoginAddresses.js';
import { FairShare1795410000000 } from './1795410000000-FairShare.js';
import { FairShareHandOverProbe1795420000000 } from './1795420000000-FairShareHandOverProbe.js';
import { PipelineEntries1795430000000 } from './1795430000000-PipelineEntries.js';
import { WorkloadKeys1795440000000 } from './1795440000000-WorkloadKeys.js';
import { PipelineRuns1795450000000 } from './1795450000000-PipelineRuns.js';
import { RunRevisions1795455000000 } from './1795455000000-RunRevisions.js';
import { Triggers1795460000000 } from './1795460000000-Triggers.js';
import { LinkSessions1795470000001 } from './1795470000001-LinkSessions.js';
import { Libraries1795480000000 } from './1795480000000-Libraries.js';
import { SessionEndpointsOnNodes1795482000000 } from './1795482000000-SessionEndpointsOnNodes.js';
import { DependentJobs1795483000000 } from './1795483000000-DependentJobs.js';
import { JobNamesPendingList1795484000000 } from './1795484000000-JobNamesPendingList.js';

/** Every migration, oldest first; the hub applies those not yet applied at start. */
export const MIGRATIONS: (new () => MigrationInterface)[] = [
  Init1795327638783,
  ChangeNotifications1795330000000,
  Identity1795333874460,
  AccessControl1795335943039,
  AuthDomains1795340754133,
  ExecutionProfiles1795341123748,
  Cluster1795342955296,
  JobUids1795350000000,
  AccessModelGuards1795351000000,
  ClusterJobPath1795354000000,
  ListsAtScale1795355000000,
  ExecutionCountsByNode1795356000000,
  SubmissionCaches1795358000000,
  PreparedLaunches1795360000000,
  FamiliarLoginAddresses1795400000000,
  FairShare1795410000000,
  FairShareHandOverProbe1795420000000,
  PipelineEntries1795430000000,
  WorkloadKeys1795440000000,
  PipelineRuns1795450000000,
  RunRevisions1795455000000,
  Triggers1795460000000,
  LinkSessions1795470000001,
  Libraries1795480000000,
  SessionEndpointsOnNodes1795482000000,
  DependentJobs1795483000000,
  JobNamesPendingList1795484000000,
];
